/**
 * Ctrl-C (SIGINT) or SIGTERM while a command has the store open: the command closes the store
 * before it exits, so what it was writing is not left half made. A backup stopped this way removes
 * its `<to>.partial` and says so; it exits 130 (143 for SIGTERM), as shells report a stopped command.
 */
import { spawn } from 'node:child_process';
import { existsSync, watch } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock, OffsetStore } from '../../src/index.js';
import { tempDir } from '../support/temp-dir.js';
import { REPO_DIR } from './cli-harness.js';

const MAIN = path.join(REPO_DIR, 'src', 'cli', 'main.ts');
const BUCKETS = 64;

/** A store whose backup copies and syncs a few hundred files: long enough to be stopped halfway. */
async function seedManyBuckets(dir: string): Promise<void> {
  const store = await OffsetStore.open({ dir, bucketCount: BUCKETS, clock: new ManualClock(1) });
  for (let round = 0; round < 4; round++)
    await store.commitOffsets(
      'readers',
      Array.from({ length: BUCKETS }, (_, bucketId) => ({
        tableId: 1,
        partitionId: 0,
        bucketId,
        offset: round * 100 + bucketId,
      })),
    );
  await store.close();
}

/** Runs `offset-store backup`, sending `signal` once `<to>.partial` appears. */
function backupStoppedBy(
  signal: NodeJS.Signals,
  dir: string,
  to: string,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string; stdout: string }> {
  return new Promise((resolve) => {
    const watcher = watch(path.dirname(to), (_event, name) => {
      if (name !== `${path.basename(to)}.partial`) return;
      watcher.close();
      child.kill(signal);
    });
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', MAIN, 'backup', '--dir', dir, '--to', to],
      {
        cwd: REPO_DIR,
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (code, exitSignal) => {
      watcher.close();
      resolve({ code, signal: exitSignal, stdout, stderr });
    });
  });
}

describe('a command stopped by a signal', () => {
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)
    it(`backup stopped by ${signal}: the partial backup is removed, the exit code is ${code}, the store opens`, async () => {
      const dir = tempDir('offset-store-cli-');
      await seedManyBuckets(dir);
      const to = path.join(tempDir('offset-store-cli-'), 'backup');
      const run = await backupStoppedBy(signal, dir, to);
      expect(run.stderr).toMatch(
        new RegExp(
          `^error: stopped by ${signal}: the backup was not made; ${to}.partial removed`,
          'm',
        ),
      );
      expect(run).toMatchObject({ code, signal: null, stdout: '' });
      expect(existsSync(`${to}.partial`)).toBe(false);
      expect(existsSync(to)).toBe(false);

      // The store was closed, not abandoned: it opens with every offset, and backs up in full.
      const store = await OffsetStore.open({ dir, clock: new ManualClock(2) });
      const fetched = await store.fetchOffsets('readers', [
        { tableId: 1, partitionId: 0, bucketId: 63 },
      ]);
      expect(fetched[0]?.offset).toBe(363);
      await store.close();
    });
});
