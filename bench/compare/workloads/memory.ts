/**
 * (f) Memory per live offset: for each adapter, a child process (`memory-probe.ts`, --expose-gc)
 * commits COMPARE_MEMORY_OFFSETS live offsets and reports, per live offset, the growth of the V8 heap,
 * of external memory (ArrayBuffers, Buffers and native objects bound to JS, which Node accounts in
 * `external`) and of RSS, after the writes and after a reopen.
 *
 * The headline, and the target check, is heap + external, the larger of after-writes and
 * after-reopen: an index kept in ArrayBuffers is memory per offset just as much as one in JS objects.
 * RSS is also reported but is noisy (allocator arenas, file pages of mmap'ed stores).
 *
 * Expected order of magnitude: peers ~0-5 B per offset (their data lives in files and bounded native
 * caches, visible in RSS only); an in-memory index tens of bytes per offset. Target: <= 80 B.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { REPO_ROOT } from '../compare-config.js';
import type { MemoryProbeResult } from '../memory-probe.js';
import type { Workload } from './workload.js';

const PROBE = fileURLToPath(new URL('../memory-probe.ts', import.meta.url));

export const memory: Workload = {
  id: 'f',
  title: 'memory per live offset (child process, --expose-gc)',
  runsVariants: false,
  peerRatio: false,
  targets: [{ kind: 'absolute', max: 50, text: '<= 50 B (heap+external) per live offset' }],
  async run(spec, context) {
    const { config } = context;
    const probe = await runProbe(spec.id, config.memoryOffsets, context.freshDir());
    const worst = Math.max(
      probe.heapAfterWrites + probe.externalAfterWrites,
      probe.heapAfterReopen + probe.externalAfterReopen,
    );
    return {
      headline: { label: 'heap+external per offset', value: worst, unit: 'B', better: 'lower' },
      details: [
        { label: 'after writes: heap', value: probe.heapAfterWrites, unit: 'B', better: 'lower' },
        { label: 'external', value: probe.externalAfterWrites, unit: 'B', better: 'lower' },
        { label: 'RSS', value: probe.rssAfterWrites, unit: 'B', better: 'lower' },
        { label: 'after reopen: heap', value: probe.heapAfterReopen, unit: 'B', better: 'lower' },
        { label: 'external', value: probe.externalAfterReopen, unit: 'B', better: 'lower' },
        { label: 'RSS', value: probe.rssAfterReopen, unit: 'B', better: 'lower' },
      ],
      notes: [
        `${probe.liveOffsets} live offsets; headline = larger of after-writes and after-reopen`,
      ],
    };
  },
};

function runProbe(adapterId: string, liveOffsets: number, dir: string): Promise<MemoryProbeResult> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', PROBE, adapterId, String(liveOffsets), dir],
      { cwd: REPO_ROOT, maxBuffer: 16 * 2 ** 20, timeout: 30 * 60_000 },
      (error, stdout, stderr) => {
        if (error !== null) {
          reject(
            new Error(`memory probe for ${adapterId} failed: ${stderr.trim() || error.message}`),
          );
          return;
        }
        const line = stdout.trim().split('\n').pop() ?? '';
        try {
          resolve(JSON.parse(line) as MemoryProbeResult);
        } catch {
          reject(
            new Error(
              `memory probe for ${adapterId} printed no result: ${stdout.trim()} ${stderr.trim()}`,
            ),
          );
        }
      },
    );
  });
}
