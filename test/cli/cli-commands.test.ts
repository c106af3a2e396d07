/**
 * Every command of the CLI run as a child process against a real store directory built through the
 * public API: exit codes, output and `--json` content. Independent runs go in parallel, each on its
 * own copy of the store (a store is opened by one process at a time). More output variants of the
 * same commands run in-process in cli-in-process.test.ts.
 */
import { appendFileSync, cpSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import * as os from 'node:os';
import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, OffsetStore } from '../../src/index.js';
import {
  dumpedBatches,
  SEEDED,
  seedStore,
  segmentPaths,
  snapshotFiles,
} from '../admin/admin-fixtures.js';
import { fileTempDir, tempDir } from '../support/temp-dir.js';
import { json, REPO_DIR, runCli } from './cli-harness.js';

let seeded: string;
/** The offsets-bucket holding group `orders` (several segments). */
let ordersBucket: number;

function copy(): string {
  const dir = tempDir('offset-store-cli-');
  cpSync(seeded, dir, { recursive: true });
  return dir;
}

async function committed(dir: string, groupId: string) {
  const store = await OffsetStore.open({
    dir,
    clock: new ManualClock(),
    compaction: { background: false },
  });
  try {
    return (await store.fetchOffsets(groupId)).map((o) => ({
      tableId: o!.tableId,
      partitionId: o!.partitionId,
      bucketId: o!.bucketId,
      offset: o!.offset,
    }));
  } finally {
    await store.close();
  }
}

beforeAll(async () => {
  seeded = fileTempDir('offset-store-cli-');
  await seedStore(seeded);
  const store = await OffsetStore.open({
    dir: seeded,
    clock: new ManualClock(),
    compaction: { background: false },
  });
  ordersBucket = store.bucketFor('orders');
  await store.close();
});

describe('offset-store commands as child processes', () => {
  it('groups list, groups describe --log-end, stats', async () => {
    const [list, described, stats] = await Promise.all([
      runCli(['groups', 'list', '--dir', copy()]),
      runCli([
        'groups',
        'describe',
        'orders',
        '--dir',
        copy(),
        '--json',
        '--log-end',
        '{"1:1": 1201, "2:7:0": 42}',
      ]),
      runCli(['stats', '--dir', copy(), '--json']),
    ]);
    expect(list.code).toBe(0);
    // Groups with committed offsets only are what Kafka calls simple groups: of the classic type, no protocol type.
    expect(list.stdout).toMatch(
      /^GROUP\s+STATE\s+TYPE\s+OFFSETS-BUCKET\nbilling\s+Empty\s+classic\s+\d\norders\s+Empty\s+classic\s+\d\n$/,
    );
    expect(list.stdout).toContain(`orders   Empty  classic               ${ordersBucket}\n`);

    expect(described.code).toBe(0);
    const report = json(described);
    expect(report).toMatchObject({
      groupId: 'orders',
      state: 'Empty',
      offsetsBucket: ordersBucket,
      groupEpoch: 0,
      members: [],
      totalLag: 200,
    });
    expect(
      report.buckets.map((b: any) => [
        b.tableId,
        b.partitionId,
        b.bucketId,
        b.committedOffset,
        b.logEndOffset,
        b.lag,
      ]),
    ).toEqual([
      [1, null, 0, 1000, null, null],
      [1, null, 1, 1001, 1201, 200],
      [1, null, 2, 1002, null, null],
      [1, null, 3, 1003, null, null],
      [2, 7, 0, 42, 42, 0],
    ]);

    expect(stats.code).toBe(0);
    expect(json(stats)).toMatchObject({ bucketCount: 4, totals: { liveOffsets: 7, groups: 2 } });
    expect(json(stats).buckets[ordersBucket]).toMatchObject({
      bucket: ordersBucket,
      state: 'ready',
      liveOffsets: 5,
      groups: 1,
      lastCheckpoint: null,
    });
  });

  it('offsets reset: a dry run writes nothing; a plan file with --execute commits it', async () => {
    const dir = copy();
    const before = snapshotFiles(dir);
    const dry = await runCli([
      'offsets',
      'reset',
      'orders',
      '--dir',
      dir,
      '--shift-by',
      '-500',
      '--table',
      '1',
    ]);
    expect(snapshotFiles(dir)).toEqual(before);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain(
      'Dry run: reset group orders shift by -500 (table 1), 4 buckets. Nothing was written; add --execute to apply.',
    );
    expect(dry.stdout).toMatch(
      /TABLE\s+PARTITION\s+BUCKET\s+CURRENT\s+NEW\s+CHANGE\n\s+1\s+-\s+0\s+1000\s+500\s+-500\n/,
    );
    expect(await committed(dir, 'orders')).toEqual(SEEDED.orders);

    const planFile = path.join(tempDir(), 'plan.json');
    writeFileSync(planFile, JSON.stringify({ '1:0': 7, '1:3': 9, '2:7:0': 40 }));
    const executed = await runCli([
      'offsets',
      'reset',
      'orders',
      '--dir',
      dir,
      '--from-file',
      planFile,
      '--execute',
      '--json',
    ]);
    expect(executed.code).toBe(0);
    expect(json(executed)).toMatchObject({
      groupId: 'orders',
      executed: true,
      target: `from ${planFile}`,
      memberCount: 0,
    });
    expect(
      json(executed).rows.map((r: any) => [r.tableId, r.bucketId, r.currentOffset, r.newOffset]),
    ).toEqual([
      [1, 0, 1000, 7],
      [1, 3, 1003, 9],
      [2, 0, 42, 40],
    ]);
    expect(await committed(dir, 'orders')).toEqual([
      { tableId: 1, partitionId: null, bucketId: 0, offset: 7 },
      SEEDED.orders[1],
      SEEDED.orders[2],
      { tableId: 1, partitionId: null, bucketId: 3, offset: 9 },
      { tableId: 2, partitionId: 7, bucketId: 0, offset: 40 },
    ]);
  });

  it('offsets delete and groups delete', async () => {
    const dir = copy();
    const deleted = await runCli([
      'offsets',
      'delete',
      'orders',
      '--dir',
      dir,
      '--table',
      '1',
      '--bucket',
      '2',
      '--json',
    ]);
    expect(deleted.code).toBe(0);
    expect(json(deleted)).toEqual({
      groupId: 'orders',
      selection: 'table 1 bucket 2',
      deleted: [{ tableId: 1, partitionId: null, bucketId: 2 }],
    });
    expect(
      (await committed(dir, 'orders')).map((o) => `${o.tableId}:${o.bucketId}`).sort(),
    ).toEqual(['1:0', '1:1', '1:3', '2:0']);
    const dropped = await runCli(['groups', 'delete', 'billing', '--dir', dir]);
    expect(dropped).toMatchObject({
      code: 0,
      stdout: 'Deleted group billing (2 committed offsets).\n',
    });
    expect(await committed(dir, 'billing')).toEqual([]);
  });

  it('log dump --records --json: NDJSON, one object per segment, batch and record, then a summary', async () => {
    const run = await runCli([
      'log',
      'dump',
      '--dir',
      copy(),
      '--bucket',
      String(ordersBucket),
      '--records',
      '--json',
    ]);
    expect(run.code).toBe(0);
    const lines = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    const orders = lines.filter((e) => e.kind === 'record' && e.groupId === 'orders');
    expect(orders).toHaveLength(10 * 4 + 1);
    expect(orders.at(-1)).toMatchObject({
      recordType: 'offset-commit',
      tableId: 2,
      partitionId: 7,
      bucketId: 0,
      offset: 42,
      tombstone: false,
      metadata: '',
    });
    expect(lines.filter((e) => e.kind === 'segment').length).toBeGreaterThan(1);
    expect(lines.filter((e) => e.kind === 'batch').map((b) => b.logOffset)).toEqual(
      lines.filter((e) => e.kind === 'batch').map((_, i) => i),
    );
    expect(lines.at(-1)).toMatchObject({
      kind: 'summary',
      bucket: ordersBucket,
      damageCount: 0,
      recordCount: lines.filter((e) => e.kind === 'record').length,
    });
  });

  it('log verify: clean exits 0; a flipped byte is corrupt (exit 1, file and position); a torn tail exits 3; nothing is modified', async () => {
    const clean = copy();
    const corrupt = copy();
    const torn = copy();
    const batches = await dumpedBatches(clean, ordersBucket);
    expect(batches.length).toBeGreaterThan(2);
    const victim = batches[1]!;
    const corruptFile = path.join(corrupt, path.relative(clean, victim.file));
    const bytes = readFileSync(corruptFile);
    bytes[victim.position + 20] = bytes[victim.position + 20]! ^ 0x01;
    writeFileSync(corruptFile, bytes);
    const tornFile = segmentPaths(torn, ordersBucket).at(-1)!;
    const lastBatch = batches.at(-1)!;
    expect(path.basename(lastBatch.file)).toBe(path.basename(tornFile));
    // An append cut short by a crash: the first 10 bytes of a batch after the end of the log.
    const tornAt = readFileSync(tornFile).length;
    appendFileSync(
      tornFile,
      readFileSync(tornFile).subarray(lastBatch.position, lastBatch.position + 10),
    );
    const before = [snapshotFiles(clean), snapshotFiles(corrupt), snapshotFiles(torn)];

    const [okRun, corruptRun, tornRun] = await Promise.all([
      runCli(['log', 'verify', '--dir', clean]),
      runCli(['log', 'verify', '--dir', corrupt, '--json']),
      runCli(['log', 'verify', '--dir', torn]),
    ]);
    expect([snapshotFiles(clean), snapshotFiles(corrupt), snapshotFiles(torn)]).toEqual(before);
    expect(okRun.code).toBe(0);
    expect(okRun.stdout).toMatch(
      /^Checked 4 offsets-buckets of .*: \d+ segments, .* batches, .* records in /,
    );
    expect(okRun.stdout).toContain('OK: every batch and record is valid.');

    expect(corruptRun.code).toBe(1);
    expect(JSON.parse(corruptRun.stderr).error).toMatchObject({
      code: 'CORRUPT_MESSAGE',
      errno: 2,
    });
    expect(json(corruptRun)).toMatchObject({ ok: false, corruptCount: 1, tornTailCount: 0 });
    expect(json(corruptRun).problems).toEqual([
      expect.objectContaining({
        kind: 'corrupt',
        bucket: ordersBucket,
        file: corruptFile,
        position: victim.position,
      }),
    ]);

    expect(tornRun.code).toBe(3);
    expect(tornRun.stdout).toMatch(
      new RegExp(`\\n\\s*${ordersBucket}\\s+\\d+\\s+.*\\s+torn-tail\\n`),
    );
    expect(tornRun.stdout).toMatch(
      new RegExp(
        `\\ntorn-tail\\s+buckets/00${ordersBucket}/${path.basename(tornFile)}\\s+${tornAt}\\s+10\\s+batch of \\d+ bytes truncated to 10; nothing valid follows`,
      ),
    );
    expect(tornRun.stdout).toContain('TORN TAIL: 1 torn tail(s); the next open repairs them');

    // Read by a pipe that went away (`| head` under pipefail): the verdict's code and error stand.
    const unread = await runCli(['log', 'verify', '--dir', corrupt], { stdoutClosed: true });
    expect(unread.code).toBe(1);
    expect(unread.stderr).toMatch(/^error: CORRUPT_MESSAGE/m);
  });

  it('compact --json: the log cleaner shrinks the log and keeps every committed offset', async () => {
    const dir = copy();
    const run = await runCli(['compact', '--dir', dir, '--json']);
    expect(run.code).toBe(0);
    const report = json(run);
    expect(report.strategy).toBe('log-cleaner');
    expect(report.bytesAfter).toBeLessThan(report.bytesBefore);
    expect(report.recordsDropped).toBeGreaterThan(0);
    expect(report.buckets).toHaveLength(4);
    expect(await committed(dir, 'orders')).toEqual(SEEDED.orders);
  });

  it('backup --to: a new store with every committed offset; an existing target exits 1 with INVALID_REQUEST', async () => {
    const dir = copy();
    const to = path.join(tempDir('offset-store-cli-'), 'backup');
    const run = await runCli(['backup', '--dir', dir, '--to', to, '--json']);
    expect(run.code).toBe(0);
    const report = json(run);
    expect(report.dir).toBe(to);
    expect(report.buckets).toBe(4);
    expect(report.segments).toBeGreaterThanOrEqual(4);
    expect(await committed(to, 'orders')).toEqual(SEEDED.orders);
    const human = await runCli(['backup', '--dir', dir, '--to', `${to}-2`]);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^Backed up 4 offsets-buckets \(\d+ segments, .+\) to .+-2 in /);
    const again = await runCli(['backup', '--dir', dir, '--to', to]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/INVALID_REQUEST.*exists/);
    const missing = await runCli(['backup', '--dir', dir]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/missing --to/);
  });

  it('compact through bin/offset-store.js from another working directory: the worker threads find their TypeScript loader too', async () => {
    const dir = copy();
    const run = await runCli(['compact', '--dir', dir, '--json'], {
      executable: [path.join(REPO_DIR, 'bin', 'offset-store.js')],
      cwd: os.tmpdir(),
    });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(json(run).recordsDropped).toBeGreaterThan(0);
    expect(await committed(dir, 'orders')).toEqual(SEEDED.orders);
  });
});

describe('--json on stderr', () => {
  it('writes warnings as JSON lines too, so that stderr is JSON lines throughout (a compaction whose worker dies)', async () => {
    const dir = tempDir('offset-store-cli-');
    const strategy = path.join(REPO_DIR, 'test', 'compaction', 'strategies', 'exiting-worker.mjs');
    const store = await OffsetStore.open({
      dir,
      bucketCount: 1,
      segmentBytesMax: 1024,
      compaction: { strategy, background: false },
    });
    for (let i = 0; i < 40; i++)
      await store.commitOffsets('g', [{ tableId: 1, bucketId: i % 3, offset: i }]);
    await store.close();
    const run = await runCli(['compact', '--dir', dir, '--strategy', strategy, '--json']);
    expect(run.code).toBe(1);
    const lines = run.stderr
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { warning?: string; error?: { code: string } });
    expect(lines.at(-1)).toMatchObject({ error: { code: 'LOG_STORAGE_ERROR' } });
    expect(lines.slice(0, -1)).toEqual([
      { warning: expect.stringMatching(/^compaction of offsets-bucket 0 failed/) },
    ]);
  });
});

describe('members a process left behind', () => {
  it('block offsets reset and groups delete until groups remove-members --all takes them out', async () => {
    const dir = tempDir('offset-store-cli-');
    const child = await runCli([dir], {
      executable: ['--import', 'tsx', path.join(import.meta.dirname, 'join-and-exit-child.ts')],
    });
    expect(child).toMatchObject({ code: 0, stdout: 'ready\n' });

    const described = json(
      await runCli(['groups', 'describe', 'scanners', '--dir', dir, '--json']),
    );
    expect(
      described.members.map((m: { instanceId: string | null }) => m.instanceId).sort(),
    ).toEqual(['host-b', null]);
    const refused = await runCli([
      'offsets',
      'reset',
      'scanners',
      '--dir',
      dir,
      '--to-offset',
      '0',
      '--execute',
    ]);
    expect(refused).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/^error: NON_EMPTY_GROUP: /),
    });

    const removal = await runCli([
      'groups',
      'remove-members',
      'scanners',
      '--dir',
      dir,
      '--all',
      '--json',
    ]);
    expect(removal.code).toBe(0);
    expect(json(removal)).toEqual({
      groupId: 'scanners',
      state: 'Empty',
      memberCount: 0,
      removed: described.members.map((m: { memberId: string; instanceId: string | null }) => ({
        memberId: m.memberId,
        instanceId: m.instanceId,
      })),
    });

    const reset = await runCli([
      'offsets',
      'reset',
      'scanners',
      '--dir',
      dir,
      '--to-offset',
      '0',
      '--execute',
    ]);
    expect(reset).toMatchObject({
      code: 0,
      stderr: '',
      stdout: expect.stringMatching(
        /^Reset group scanners to offset 0 \(every bucket\): 4 buckets committed\./,
      ),
    });
    expect(await runCli(['groups', 'delete', 'scanners', '--dir', dir])).toMatchObject({
      code: 0,
      stdout: 'Deleted group scanners (4 committed offsets).\n',
    });
    expect(json(await runCli(['groups', 'list', '--dir', dir, '--json']))).toEqual({ groups: [] });
  }, 60_000);

  it('groups remove-members by --member and --instance: human output, UNKNOWN_MEMBER_ID, usage errors', async () => {
    const dir = tempDir('offset-store-cli-');
    expect(
      await runCli([dir], {
        executable: ['--import', 'tsx', path.join(import.meta.dirname, 'join-and-exit-child.ts')],
      }),
    ).toMatchObject({ code: 0 });
    const members: { memberId: string; instanceId: string | null }[] = json(
      await runCli(['groups', 'describe', 'scanners', '--dir', dir, '--json']),
    ).members;
    const dynamic = members.find((m) => m.instanceId === null)!;

    const usage = await runCli([
      'groups',
      'remove-members',
      'scanners',
      '--dir',
      dir,
      '--all',
      '--instance',
      'host-b',
    ]);
    expect(usage).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(
        /^error: give exactly one of --all, --member <memberId>\.\.\. or --instance <instanceId>\.\.\.\n/,
      ),
    });
    const unknown = await runCli([
      'groups',
      'remove-members',
      'scanners',
      '--dir',
      dir,
      '--member',
      dynamic.memberId,
      '--member',
      'ghost',
    ]);
    expect(unknown).toMatchObject({
      code: 1,
      stderr:
        'error: UNKNOWN_MEMBER_ID: member ghost is not in group scanners; nothing was removed (errno 25)\n',
    });

    const byInstance = await runCli([
      'groups',
      'remove-members',
      'scanners',
      '--dir',
      dir,
      '--instance',
      'host-b',
    ]);
    expect(byInstance.code).toBe(0);
    expect(byInstance.stdout).toMatch(
      /^Removed 1 member from group scanners; 1 member left, state (Reconciling|Assigning)\.\n\nMEMBER-ID\s+INSTANCE-ID\n\S+\s+host-b\n$/,
    );
    // Durable although the remaining member never heartbeats: the next process sees one member.
    const byMember = await runCli([
      'groups',
      'remove-members',
      'scanners',
      '--dir',
      dir,
      '--member',
      dynamic.memberId,
    ]);
    expect(byMember).toMatchObject({
      code: 0,
      stdout: `Removed 1 member from group scanners; it is now Empty.\n\nMEMBER-ID${' '.repeat(dynamic.memberId.length - 7)}INSTANCE-ID\n${dynamic.memberId}  -\n`,
    });
    expect(
      await runCli(['groups', 'remove-members', 'scanners', '--dir', dir, '--all']),
    ).toMatchObject({ code: 0, stdout: 'Group scanners has no members: nothing removed.\n' });
  }, 60_000);
});
