/**
 * LMDB's open of an environment ends the process (SIGSEGV in lmdb-js's error path) when it fails,
 * so a new checkpoint environment whose folder has no room must be refused before LMDB writes
 * there. The child runs under strace, which makes every write to that folder's data file and to
 * the store's probe fail with ENOSPC, as a full disk would.
 */
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { OffsetStore } from '../../src/index.js';
import { ROOM_PROBE_FILE } from '../../src/kv/checkpoint-store.js';
import { hasStrace, runTsWithFaults } from '../support/strace.js';
import { tempDir } from '../support/temp-dir.js';

const CHILD = fileURLToPath(new URL('./checkpoint-open-child.ts', import.meta.url));

describe('a new checkpoint environment on a full disk', () => {
  it.runIf(process.platform === 'linux')(
    'is refused with LOG_STORAGE_ERROR naming its folder, the process going on; the next open with room succeeds',
    async () => {
      expect(hasStrace, 'this test needs the strace command (apt-get install strace)').toBe(true);
      const dir = path.join(tempDir(), 'store');
      const folder = path.join(dir, 'buckets', '001', 'checkpoint');
      const run = runTsWithFaults(
        {
          inject: ['pwrite64,pwritev,write,writev:error=ENOSPC'],
          paths: [path.join(folder, 'data.mdb'), path.join(folder, ROOM_PROBE_FILE)],
        },
        [CHILD, dir],
      );
      expect(run.signal, run.stderr).toBeNull();
      expect(run.status, run.stderr).toBe(0);
      const outcome = JSON.parse(run.stdout.trim().split('\n').at(-1)!);
      expect(outcome).toEqual({
        code: 'LOG_STORAGE_ERROR',
        message: expect.stringMatching(
          new RegExp(`cannot create the checkpoint environment in ${folder}: .*ENOSPC`),
        ),
      });
      const store = await OffsetStore.open({
        dir,
        bucketCount: 2,
        compaction: { strategy: 'checkpoint' },
      });
      await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 7 }]);
      expect((await store.fetchOffsets('g', [{ tableId: 1, bucketId: 0 }]))[0]?.offset).toBe(7);
      await store.close();
    },
    90_000,
  );
});
