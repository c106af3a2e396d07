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

const CHILD = path.join(import.meta.dirname, 'open-emfile-child.ts');

describe('a store at its process limits', () => {
  // With a checkpointing strategy each offsets-bucket opens an LMDB environment too, whose open
  // crashes the process (lmdb-js) when a descriptor runs out inside it.
  for (const strategy of ['log-cleaner', 'checkpoint'])
    it.runIf(process.platform === 'linux')(
      `running out of descriptors is LOG_STORAGE_ERROR naming the limit; everything opened is closed and the lock released (${strategy})`,
      async () => {
        const dir = tempDir();
        const stdout = await new Promise<string>((resolve, reject) => {
          execFile(
            'bash',
            [
              '-c',
              `ulimit -n 512 && exec "${process.execPath}" --import tsx "${CHILD}" "${dir}" ${strategy}`,
            ],
            { timeout: 60_000 },
            (error, out, err) => {
              if (error !== null) reject(new Error(`child failed: ${error.message}\n${err}`));
              else resolve(out);
            },
          );
        });
        const report = JSON.parse(stdout);
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
      const stdout = await new Promise<string>((resolve, reject) => {
        execFile(
          process.execPath,
          ['--import', 'tsx', path.join(import.meta.dirname, 'close-fd-limit-child.ts'), dir, '16'],
          { timeout: 60_000 },
          (error, out, err) => {
            if (error !== null) reject(new Error(`child failed: ${error.message}\n${err}`));
            else resolve(out);
          },
        );
      });
      expect(JSON.parse(stdout)).toMatchObject({ close: 'ok' });
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
      const child = path.join(import.meta.dirname, 'address-limit-child.ts');
      const stdout = await new Promise<string>((resolve, reject) => {
        execFile(
          'bash',
          // 200 GiB: room for Node, not for 16 maps of 16 GiB (which crashed the process).
          [
            '-c',
            `ulimit -v ${200 * 1024 * 1024} && exec "${process.execPath}" --import tsx "${child}" "${dir}"`,
          ],
          { timeout: 60_000 },
          (error, out, err) => {
            if (error !== null) reject(new Error(`child failed: ${error.message}\n${err}`));
            else resolve(out);
          },
        );
      });
      expect(JSON.parse(stdout)).toEqual({ result: 'ok' });
      const store = await OffsetStore.open({ dir, compaction: { strategy: 'checkpoint' } });
      expect((await store.fetchOffsets('g63'))[0]?.offset).toBe(63);
      await store.close();
    },
    60_000,
  );
});
