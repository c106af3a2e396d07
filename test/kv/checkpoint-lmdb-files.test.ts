/**
 * LMDB ends the process when it cannot open its files, also to read only: a checkpoint's lock.mdb
 * or data.mdb replaced by a FIFO, a directory or a symbolic link to nothing is refused before LMDB
 * sees it (LOG_STORAGE_ERROR naming the file), by an open to write and to read only alike, in a
 * child process that must live to say so.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { OffsetStore } from '../../src/index.js';
import { tempDir } from '../support/temp-dir.js';

const CHILD = fileURLToPath(new URL('./checkpoint-open-child.ts', import.meta.url));

/** A closed store with a checkpoint in each of its 2 buckets. */
async function storeWithCheckpoints(): Promise<string> {
  const dir = path.join(tempDir(), 'store');
  const store = await OffsetStore.open({
    dir,
    bucketCount: 2,
    compaction: { strategy: 'checkpoint', background: false },
  });
  for (let i = 0; i < 20; i++)
    await store.commitOffsets(`g${i}`, [{ tableId: 1, bucketId: 0, offset: i }]);
  await store.compact();
  await store.close();
  return dir;
}

function openInChild(dir: string, mode: 'read-only' | 'write'): unknown {
  const run = spawnSync(process.execPath, ['--import', 'tsx', CHILD, dir, mode], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(run.signal, `the child was ended by a signal: ${run.stderr}`).toBeNull();
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout.trim().split('\n').at(-1)!);
}

const REPLACEMENTS = [
  ['a FIFO', (file: string) => spawnSync('mkfifo', [file])],
  ['a directory', (file: string) => mkdirSync(file)],
  ['a symbolic link to nothing', (file: string) => symlinkSync('/nonexistent/lock', file)],
] as const;

describe("a checkpoint's LMDB file that is not a regular file", () => {
  for (const [what, make] of REPLACEMENTS) {
    it.runIf(process.platform === 'linux')(
      `is refused with LOG_STORAGE_ERROR when lock.mdb is ${what}, to read only and to write, the process going on`,
      async () => {
        const dir = await storeWithCheckpoints();
        const lock = path.join(dir, 'buckets', '000', 'checkpoint', 'lock.mdb');
        rmSync(lock, { force: true });
        make(lock);
        for (const mode of ['read-only', 'write'] as const)
          expect(openInChild(dir, mode), mode).toEqual({
            code: 'LOG_STORAGE_ERROR',
            message: expect.stringContaining(`${lock} is ${what}, where LMDB needs a regular file`),
          });
        // Removed, as the message says, the store opens with every offset.
        rmSync(lock, { recursive: true, force: true });
        const store = await OffsetStore.open({ dir, bucketCount: 2, readOnly: true });
        expect((await store.fetchOffsets('g7', [{ tableId: 1, bucketId: 0 }]))[0]?.offset).toBe(7);
        await store.close();
      },
    );
  }
});
