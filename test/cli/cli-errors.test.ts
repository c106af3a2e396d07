/**
 * Failures of the CLI as a child process: each prints the error code and exits non-zero, and none
 * creates or changes a store it should not touch.
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, OffsetStore } from '../../src/index.js';
import { seedStore, seedStoreWithMember, snapshotFiles } from '../admin/admin-fixtures.js';
import { fileTempDir, tempDir } from '../support/temp-dir.js';
import { REPO_DIR, json, runCli } from './cli-harness.js';

const MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

let seeded: string;
let withMember: string;

beforeAll(async () => {
  seeded = fileTempDir('offset-store-cli-');
  withMember = fileTempDir('offset-store-cli-');
  await Promise.all([seedStore(seeded), seedStoreWithMember(withMember)]);
});

describe('offset-store failures', () => {
  it('a missing store directory: INVALID_CONFIG, exit 1, and no store is created', async () => {
    const missing = path.join(tempDir(), 'no-store-here');
    const run = await runCli(['groups', 'list', '--dir', missing]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^error: INVALID_CONFIG: no offset store in .*no-store-here: store\.json not found \(errno 40\)\n$/,
    );
    expect(run.stdout).toBe('');
    // The security commands answer it the same way, as JSON with --json.
    for (const args of [
      ['users', 'list'],
      ['acls', 'list'],
      ['users', 'remove', 'alice'],
    ]) {
      const security = await runCli([...args, '--dir', missing, '--json']);
      expect({ args, code: security.code }).toEqual({ args, code: 1 });
      expect(JSON.parse(security.stderr)).toMatchObject({
        error: { code: 'INVALID_CONFIG', message: expect.stringMatching(/store\.json not found/) },
      });
    }
    expect(existsSync(missing)).toBe(false);
  });

  it('a store open in another process: STORE_LOCKED for a command that writes, exit 1; the read commands read it without its lock', async () => {
    const dir = tempDir();
    cpSync(seeded, dir, { recursive: true });
    const store = await OffsetStore.open({
      dir,
      clock: new ManualClock(),
      compaction: { background: false },
    });
    try {
      const run = await runCli(['groups', 'delete', 'billing', '--dir', dir]);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(
        new RegExp(
          `^error: STORE_LOCKED: .* is locked by live process ${process.pid} \\(errno 1001\\)\\n$`,
        ),
      );
      // Committed by the live process after the files were copied: a reader sees it.
      await store.commitOffsets('billing', [{ tableId: 9, bucketId: 0, offset: 77 }]);
      const live = `the store is open by live process ${process.pid}: read without its lock, as of now (nothing is written)`;
      const listed = await runCli(['groups', 'list', '--dir', dir, '--json']);
      expect(listed.code).toBe(0);
      expect(listed.stderr).toContain(live);
      expect(
        json(listed)
          .groups.map((g: { groupId: string }) => g.groupId)
          .sort(),
      ).toEqual(['billing', 'orders']);
      const described = await runCli(['groups', 'describe', 'billing', '--dir', dir, '--json']);
      expect(described.code).toBe(0);
      expect(json(described).buckets).toContainEqual(
        expect.objectContaining({ tableId: 9, bucketId: 0, committedOffset: 77 }),
      );
      const stats = await runCli(['stats', '--dir', dir, '--read-only']);
      expect(stats.code).toBe(0);
      expect(stats.stderr).toContain(live);
      // A reset's plan writes nothing, so it is made from a view; executing it needs the lock.
      const reset = [
        'offsets',
        'reset',
        'billing',
        '--dir',
        dir,
        '--to-offset',
        '5',
        '--table',
        '9',
      ];
      const planned = await runCli([...reset, '--json']);
      expect(planned.code).toBe(0);
      expect(planned.stderr).toContain(live);
      expect(json(planned)).toMatchObject({ executed: false });
      const executed = await runCli([...reset, '--execute']);
      expect(executed.code).toBe(1);
      expect(executed.stderr).toMatch(/^error: STORE_LOCKED/);
      // The store is still the live process's: it commits and closes as before.
      await store.commitOffsets('billing', [{ tableId: 9, bucketId: 0, offset: 78 }]);
    } finally {
      await store.close();
    }
  });

  it('--read-only on a --dir that is a file: INVALID_CONFIG, as without it', async () => {
    const file = path.join(tempDir(), 'file');
    writeFileSync(file, 'not a store');
    for (const extra of [[], ['--read-only']]) {
      const run = await runCli(['stats', '--dir', file, ...extra]);
      expect({ extra, code: run.code }).toEqual({ extra, code: 1 });
      expect(run.stderr).toMatch(/^error: INVALID_CONFIG: .*file is not a directory/);
    }
  });

  it('an unknown group: GROUP_ID_NOT_FOUND as JSON on stderr with --json, exit 1', async () => {
    const run = await runCli(['groups', 'describe', 'ghost', '--dir', seeded, '--json']);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(JSON.parse(run.stderr)).toEqual({
      error: {
        code: 'GROUP_ID_NOT_FOUND',
        errno: 69,
        retriable: false,
        message: 'GROUP_ID_NOT_FOUND: group ghost has no committed offsets and no members',
      },
    });
  });

  it('a group with members (restored from its snapshot): NON_EMPTY_GROUP, nothing written', async () => {
    const before = snapshotFiles(withMember);
    const dropped = await runCli(['groups', 'delete', 'busy', '--dir', withMember]);
    expect(dropped.code).toBe(1);
    expect(dropped.stderr).toBe(
      'error: NON_EMPTY_GROUP: cannot delete it: group busy has 1 member(s) (errno 68)\n',
    );
    expect(snapshotFiles(withMember)).toEqual(before);
  });

  it('a --dir that is a regular file: INVALID_CONFIG naming it, exit 1, for every command that reads a store and for the demo', async () => {
    const file = path.join(tempDir(), 'offsets');
    writeFileSync(file, 'not a store');
    for (const args of [
      ['groups', 'list'],
      ['stats'],
      ['log', 'verify'],
      ['log', 'dump', '--bucket', '0'],
      ['demo'],
    ]) {
      const run = await runCli([...args, '--dir', file]);
      expect({ args, code: run.code, stderr: run.stderr }).toEqual({
        args,
        code: 1,
        stderr: `error: INVALID_CONFIG: ${file} is not a directory: it or a folder on its path is a file (errno 40)\n`,
      });
    }
    expect(readFileSync(file, 'utf8')).toBe('not a store');
    // The security and lab commands too: the file system's refusal, exit 1, not an internal error.
    for (const args of [
      ['users', 'list'],
      ['acls', 'list'],
    ]) {
      const run = await runCli([...args, '--dir', file]);
      expect({ args, code: run.code }).toEqual({ args, code: 1 });
      expect(run.stderr).toMatch(/^error: LOG_STORAGE_ERROR: ENOTDIR: .*\(errno 1002\)\n$/);
    }
  });

  it.runIf(process.platform === 'linux')(
    'a process allowed too few descriptors for the store: LOG_STORAGE_ERROR saying to raise ulimit -n, exit 1',
    async () => {
      const dir = tempDir();
      await (
        await OffsetStore.open({
          dir,
          // More buckets than the limit below allows descriptors: a tight limit (64) also starves
          // the module loader, which reads many source files at once under load.
          bucketCount: 700,
          clock: new ManualClock(),
          compaction: { strategy: 'none' },
        })
      ).close();
      const run = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        execFile(
          'bash',
          [
            '-c',
            `ulimit -n 512 && exec "${process.execPath}" --import tsx "${MAIN}" stats --dir "${dir}"`,
          ],
          { cwd: REPO_DIR, timeout: 60_000 },
          (error, _stdout, stderr) => {
            resolve({ code: error === null ? 0 : (error.code as number), stderr });
          },
        );
      });
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(
        new RegExp(
          `^error: LOG_STORAGE_ERROR: offsets-bucket \\d+ of ${dir} failed to open: EMFILE: too many open files.*: raise its limit \\(ulimit -n\\), or use a store with fewer offsets-buckets \\(errno 1002\\)\n$`,
        ),
      );
    },
    60_000,
  );

  it('a command stopped by an await that can never settle says so on stderr (Node exits with 13)', async () => {
    // Node 20 gives 'exit' listeners code 0 here and sets process.exitCode to 13: the report looked
    // at the code alone and never fired.
    const child = fileURLToPath(new URL('./unsettled-exit-child.ts', import.meta.url));
    const run = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(process.execPath, ['--import', 'tsx', child], { timeout: 30_000 }, (e, _o, stderr) =>
        resolve({ code: e === null ? 0 : (e.code as number), stderr }),
      );
    });
    expect(run).toEqual({
      code: 13,
      stderr: expect.stringContaining('internal error: the command stopped before finishing'),
    });
  });

  it('an output that cannot be written (a full disk): said once on stderr, exit 1, no stack trace', async () => {
    const run = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(
        'bash',
        [
          '-c',
          `exec "${process.execPath}" --import tsx "${MAIN}" groups list --dir "${seeded}" > /dev/full`,
        ],
        { cwd: REPO_DIR, timeout: 60_000 },
        (error, _stdout, stderr) => {
          resolve({ code: error === null ? 0 : (error.code as number), stderr });
        },
      );
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'error: writing the output failed (ENOSPC: no space left on device, write); the command goes on without it\n',
    );
  });

  it('bad usage: exit 2 with a pointer to --help', async () => {
    const run = await runCli(['offsets', 'reset', 'orders', '--dir', seeded, '--to-offset', 'ten']);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      `error: --to-offset must be an integer >= 0, got "ten"\nRun 'offset-store offsets reset --help' for usage.\n`,
    );
    const huge = await runCli([
      'offsets',
      'reset',
      'orders',
      '--dir',
      seeded,
      '--to-offset',
      '9007199254740992',
    ]);
    expect(huge.code).toBe(2);
    expect(huge.stderr).toMatch(
      /^error: --to-offset must be at most 9007199254740991 \(2\^53 - 1\), got "9007199254740992"\n/,
    );
    const workers = await runCli(['compact', '--dir', seeded, '--workers', '100000']);
    expect(workers.code).toBe(2);
    expect(workers.stderr).toMatch(
      /^error: --workers must be an integer in \[1, 1024\], got "100000"\n/,
    );
  });

  it('bad usage with --json: the error is a JSON object on stderr too (code USAGE), exit 2', async () => {
    const bad = await runCli([
      'offsets',
      'reset',
      'orders',
      '--dir',
      seeded,
      '--to-offset',
      'ten',
      '--json',
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stdout).toBe('');
    expect(JSON.parse(bad.stderr)).toEqual({
      error: {
        code: 'USAGE',
        message: '--to-offset must be an integer >= 0, got "ten"',
        help: 'offset-store offsets reset --help',
      },
    });
    const unknownOption = await runCli(['groups', 'list', '--dir', seeded, '--jsn', '--json']);
    expect(unknownOption.code).toBe(2);
    expect(JSON.parse(unknownOption.stderr).error).toMatchObject({
      code: 'USAGE',
      message: 'unknown option --jsn. Did you mean --json?',
    });
    const unknownCommand = await runCli(['groups', 'lst', '--dir', seeded, '--json']);
    expect(unknownCommand.code).toBe(2);
    expect(JSON.parse(unknownCommand.stderr)).toEqual({
      error: {
        code: 'USAGE',
        message: 'unknown command "groups lst"',
        help: 'offset-store groups --help',
      },
    });
  });
});
