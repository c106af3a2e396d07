/**
 * A store in a process at its limits, each test in a child process whose limit it sets: out of file
 * descriptors at open (LOG_STORAGE_ERROR naming the limit, everything opened closed, the lock
 * released), with and without LMDB checkpoint environments (whose open crashed the process when a
 * descriptor ran out inside lmdb-js); a checkpointing store that opened at its open-file limit
 * closing there; and one whose address space is limited, where LMDB's maps must fit.
 */
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { OffsetStore } from '../../src/index.js';
import { tempDir } from '../support/temp-dir.js';

/**
 * Runs test/store/`script` under Node with `args`, after the shell's `limit` (`ulimit -n 512`; none
 * when empty), and parses the JSON line it prints.
 */
// The report is whatever JSON the child prints (JSON.parse's own type), checked field by field.
function runChild(script: string, args: string[], limit = ''): Promise<any> {
  const child = path.join(import.meta.dirname, script);
  const command = `${limit === '' ? '' : `${limit} && `}exec "$0" "$@"`;
  return new Promise((resolve, reject) => {
    execFile(
      'bash',
      ['-c', command, process.execPath, '--import', 'tsx', child, ...args],
      { timeout: 60_000 },
      (error, out, err) => {
        if (error !== null) reject(new Error(`child failed: ${error.message}\n${err}`));
        else resolve(JSON.parse(out));
      },
    );
  });
}

describe('a store at its process limits', () => {
  // With a checkpointing strategy each offsets-bucket opens an LMDB environment too, whose open
  // crashes the process (lmdb-js) when a descriptor runs out inside it.
  for (const strategy of ['log-cleaner', 'checkpoint'])
    it.runIf(process.platform === 'linux')(
      `running out of descriptors is LOG_STORAGE_ERROR naming the limit; everything opened is closed and the lock released (${strategy})`,
      async () => {
        const dir = tempDir();
        const report = await runChild('open-emfile-child.ts', [dir, strategy], 'ulimit -n 512');
        expect(report.failure).toMatchObject({
          name: 'OffsetStoreError',
          code: 'LOG_STORAGE_ERROR',
        });
        expect(report.failure.message).toMatch(
          new RegExp(
            `^LOG_STORAGE_ERROR: offsets-bucket \\d+ of ${dir} failed to open: EMFILE: too many open files, .*: the process may open too few files for 700 offsets-buckets \\(one log file each, and about four more each with a checkpointing compaction strategy\\): raise its limit \\(ulimit -n\\)`,
          ),
        );
        expect(report.descriptorsAfter, 'every descriptor the open took is closed').toBe(
          report.descriptorsBefore,
        );
        expect(report.lockFileLeft).toBe(false);
        expect(report.relock).toBe('ok');
      },
      60_000,
    );

  it.runIf(process.platform === 'linux')(
    'a checkpointing store that opened at its open-file limit closes there, its last checkpoints written a few at a time',
    async () => {
      const dir = tempDir();
      expect(await runChild('close-fd-limit-child.ts', [dir, '16'])).toMatchObject({ close: 'ok' });
      const store = await OffsetStore.open({ dir, compaction: { strategy: 'checkpoint' } });
      expect((await store.fetchOffsets('g399'))[0]?.offset).toBe(399);
      await store.close();
    },
    60_000,
  );

  it.runIf(process.platform === 'linux')(
    'a checkpointing store opens, checkpoints and closes in a process whose address space is limited (each LMDB map reserves a share of it)',
    async () => {
      const dir = tempDir();
      // 200 GiB: room for Node, not for 16 maps of 16 GiB (which crashed the process).
      const report = await runChild(
        'address-limit-child.ts',
        [dir],
        `ulimit -v ${200 * 1024 * 1024}`,
      );
      expect(report).toEqual({ result: 'ok' });
      const store = await OffsetStore.open({ dir, compaction: { strategy: 'checkpoint' } });
      expect((await store.fetchOffsets('g63'))[0]?.offset).toBe(63);
      await store.close();
    },
    60_000,
  );
});
