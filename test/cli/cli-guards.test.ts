/**
 * What an operator relies on at the edges of the command line, run in-process: a value out of range
 * or a flag combination that does not say one thing is bad usage (exit 2) and writes nothing, a value
 * at its limit is taken, and the output says no more than is true (no member warning for a group
 * without members, no negative-lag flag for a group that is caught up, a leader epoch of 0 shown).
 */
import { cpSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import {
  formatBytes,
  formatDuration,
  formatPercentChange,
  printable,
} from '../../src/cli/output.js';
import { OffsetStore } from '../../src/index.js';
import { seededStores, snapshotFiles } from '../admin/admin-fixtures.js';
import { tempDir } from '../support/temp-dir.js';
import { runCliCaptured } from '../support/run-cli.js';

const run = runCliCaptured;

const stores = seededStores();
const { copy } = stores;

/** Runs the command line with `input` as stdin (a pipe that has ended). */
async function runWithStdin(args: string[], input: string) {
  const stdin = new PassThrough();
  stdin.end(input);
  const saved = Object.getOwnPropertyDescriptor(process, 'stdin')!;
  Object.defineProperty(process, 'stdin', { value: stdin, configurable: true });
  try {
    return await run(args);
  } finally {
    Object.defineProperty(process, 'stdin', saved);
  }
}

describe('bad usage is exit 2 and writes nothing', () => {
  it('refuses a negative offset, bucket or log offset where only >= 0 makes sense', async () => {
    const dir = copy();
    const before = snapshotFiles(dir);
    const reset = await run([
      'offsets',
      'reset',
      'orders',
      '--dir',
      dir,
      '--to-offset',
      '-5',
      '--execute',
    ]);
    expect(reset).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^error: --to-offset must be an integer >= 0, got "-5"\n/),
    });
    const dump = await run(['log', 'dump', '--dir', dir, '--bucket', '-1']);
    expect(dump).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^error: --bucket must be an integer >= 0, got "-1"\n/),
    });
    expect(snapshotFiles(dir)).toEqual(before);
  });

  it('refuses --partition without --table, in a reset and in a delete', async () => {
    const dir = copy();
    const before = snapshotFiles(dir);
    for (const args of [
      ['offsets', 'reset', 'orders', '--dir', dir, '--to-offset', '1', '--partition', '7'],
      ['offsets', 'delete', 'orders', '--dir', dir, '--all', '--partition', '7'],
    ])
      expect(await run(args), args.join(' ')).toMatchObject({
        code: 2,
        stderr: expect.stringMatching(/^error: --partition and --bucket need --table\n/),
      });
    expect(snapshotFiles(dir)).toEqual(before);
  });

  it('refuses offsets delete with both --all and --table: it would not say which offsets go', async () => {
    const dir = copy();
    const before = snapshotFiles(dir);
    expect(
      await run(['offsets', 'delete', 'orders', '--dir', dir, '--all', '--table', '1']),
    ).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^error: give either --table .* or --all\n/),
    });
    expect(snapshotFiles(dir)).toEqual(before);
  });

  it('refuses a second group id (a typo, or two groups meant) instead of acting on the first', async () => {
    const dir = copy();
    const before = snapshotFiles(dir);
    expect(await run(['groups', 'delete', 'orders', 'billing', '--dir', dir])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^error: unexpected argument "billing"\n/),
    });
    expect(snapshotFiles(dir)).toEqual(before);
  });

  it('refuses an empty --dir (an unset shell variable) instead of using the working directory', async () => {
    expect(await run(['groups', 'list', '--dir', ''])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^error: --dir <path> is required\n/),
    });
  });

  it('refuses an empty --to for a backup', async () => {
    expect(await run(['backup', '--dir', copy(), '--to', ''])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^error: missing --to <dir>\n/),
    });
  });

  it('refuses groups remove-members naming none of --all, --member, --instance, and removes no member', async () => {
    const dir = tempDir('offset-store-cli-');
    cpSync(stores.withMember, dir, { recursive: true });
    expect(await run(['groups', 'remove-members', 'busy', '--dir', dir])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^error: give exactly one of --all, --member/),
    });
    const described = await run(['groups', 'describe', 'busy', '--dir', dir, '--json']);
    expect(JSON.parse(described.stdout).members).toHaveLength(1);
  });
});

describe('values at their limits are taken', () => {
  it('takes the largest bucket id, 2^31 - 1', async () => {
    const plan = await run([
      'offsets',
      'reset',
      'orders',
      '--dir',
      stores.seeded,
      '--to-offset',
      '3',
      '--table',
      '1',
      '--bucket',
      '2147483647',
      '--json',
    ]);
    expect(plan.code, plan.stderr).toBe(0);
    expect(JSON.parse(plan.stdout).rows).toEqual([
      expect.objectContaining({ tableId: 1, bucketId: 2147483647, currentOffset: null }),
    ]);
  });

  it('users add takes --iterations 16384, the most Kafka allows', async () => {
    const dir = copy();
    const added = await runWithStdin(
      ['users', 'add', 'alice', '--dir', dir, '--password-stdin', '--iterations', '16384'],
      'a-long-Secret-42\n',
    );
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toBe(
      'User alice saved (SCRAM-SHA-256, SCRAM-SHA-512; 16384 iterations).\n',
    );
  });
});

describe('output says no more than is true', () => {
  it('a dry run on a group without members warns of no members', async () => {
    const dry = await run([
      'offsets',
      'reset',
      'orders',
      '--dir',
      stores.seeded,
      '--to-offset',
      '0',
    ]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(/^Dry run: reset group orders /);
    expect(dry.stderr).toBe('');
  });

  it('a group caught up to the log end has lag 0, not flagged negative', async () => {
    const described = await run([
      'groups',
      'describe',
      'orders',
      '--dir',
      stores.seeded,
      '--log-end',
      '{"1:0": 1000, "1:1": 1001}',
    ]);
    expect(described.code).toBe(0);
    expect(described.stdout).toMatch(/\n\s+1\s+-\s+0\s+1000\s+1000\s+0\s/);
    expect(described.stdout).not.toContain('!');
    expect(described.stderr).toBe('');
  });

  it('shows a leader epoch of 0 (only a negative one, none known, is shown as -)', async () => {
    const dir = tempDir('offset-store-cli-');
    const store = await OffsetStore.open({ dir, compaction: { background: false } });
    await store.commitOffsets('g', [
      { tableId: 1, bucketId: 0, offset: 5, leaderEpoch: 0 },
      { tableId: 1, bucketId: 1, offset: 6, leaderEpoch: 3 },
    ]);
    await store.close();
    const described = await run(['groups', 'describe', 'g', '--dir', dir]);
    expect(described.code, described.stderr).toBe(0);
    expect(described.stdout).toMatch(/\n\s+1\s+-\s+0\s+5\s+0\s+\d{4}-/);
    expect(described.stdout).toMatch(/\n\s+1\s+-\s+1\s+6\s+3\s+\d{4}-/);
  });

  it('acls list --group shows the ACLs of that group only', async () => {
    const dir = copy();
    for (const group of ['team-a', 'team-b'])
      expect(
        (
          await run([
            'acls',
            'add',
            '--dir',
            dir,
            '--allow-principal',
            'User:alice',
            '--operation',
            'Read',
            '--group',
            group,
          ])
        ).code,
      ).toBe(0);
    const listed = await run(['acls', 'list', '--dir', dir, '--group', 'team-a', '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(
      (JSON.parse(listed.stdout) as { acls: { name: string }[] }).acls.map((a) => a.name),
    ).toEqual(['team-a']);
  });
});

describe('names clients chose: C1 controls and DEL', () => {
  it('escapes DEL and the C1 controls (a single-byte CSI, NEL) as well as C0', async () => {
    expect(printable('a\x7fb\x9b2Jc\x85d')).toBe('a\\x7fb\\x9b2Jc\\x85d');
    const dir = tempDir('offset-store-cli-');
    const evil = 'x\x9b2J\x9b31mred\x85forged  Stable';
    const store = await OffsetStore.open({ dir, compaction: { background: false } });
    await store.commitOffsets(evil, [{ tableId: 1, bucketId: 0, offset: 5 }]);
    await store.close();
    for (const args of [
      ['groups', 'list', '--dir', dir],
      ['groups', 'describe', evil, '--dir', dir],
    ]) {
      const { code, stdout, stderr } = await run(args);
      expect(code, stderr).toBe(0);
      expect(stdout + stderr).not.toMatch(/[\x7f-\x9f]/);
      expect(stdout).toContain('x\\x9b2J\\x9b31mred\\x85forged  Stable');
    }
  });
});

describe('human output helpers at their edges', () => {
  it('formats no change without a sign, a rise with +', () => {
    expect(formatPercentChange(100, 100)).toBe('0.0%');
    expect(formatPercentChange(100, 150)).toBe('+50.0%');
  });

  // Defect: a value that rounds up to the next unit was printed as 60 of the unit below it.
  it('rounds a duration or a size into the next unit rather than showing 60 s, 1000 ms or 1024 KiB', () => {
    expect([999.6, 59_999, 119_700, 3_599_600].map(formatDuration)).toEqual([
      '1.00 s',
      '1 min 00 s',
      '2 min 00 s',
      '60 min 00 s',
    ]);
    expect([1024 * 1024 - 1, 1023.96 * 1024].map(formatBytes)).toEqual(['1.0 MiB', '1.0 MiB']);
  });
});
