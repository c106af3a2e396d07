/**
 * The etcd log against a real single-member etcd: the LogPort conformance suite, then what only a
 * replicated log has: an append whose answer is lost is resolved by reading back (never guessed),
 * etcd's NOSPACE alarm is a retriable error that leaves the log usable, truncation compacts etcd's
 * history, and a batch over etcd's request limit is refused before anything is sent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isOffsetStoreError, OffsetStoreError } from '../../src/errors/index.js';
import {
  ClusterKeys,
  EtcdConnection,
  EtcdLog,
  claimBucket,
  etcdError,
  releaseBucket,
  type OwnerToken,
} from '../../src/cluster/index.js';
import { sealBatch } from '../../src/codec/index.js';
import { testBatch } from '../support/log-fixtures.js';
import { EtcdCluster } from '../support/etcd-cluster.js';
import { overrideConnection } from './connection-override.js';
import { describeLogPort, scanAll } from '../log-port/log-port-conformance.js';

let etcd: EtcdCluster;
let connection: EtcdConnection;
let prefixes = 0;

beforeAll(async () => {
  etcd = await EtcdCluster.start({ members: 1 });
  connection = new EtcdConnection({ endpoints: etcd.endpoints, callTimeoutMs: 2000 });
});

afterAll(async () => {
  connection?.close();
  await etcd?.stop();
});

/** A fresh cluster prefix, so each test has its own keys. */
function freshKeys(): ClusterKeys {
  return new ClusterKeys(`/test-${process.pid}-${prefixes++}/`);
}

async function claimed(keys: ClusterKeys, nodeId: string): Promise<OwnerToken> {
  const token = await claimBucket(connection, keys.bucket(0), nodeId, undefined);
  expect(token).toBeDefined();
  return token!;
}

describeLogPort('etcd log (1 member)', {
  fences: true,
  async create() {
    const keys = freshKeys();
    const bucket = keys.bucket(0);
    let token = await claimed(keys, 'n1');
    const opened: EtcdLog[] = [];
    const open = async () => {
      const log = await EtcdLog.open({ connection, keys: bucket, owner: token });
      opened.push(log);
      return log;
    };
    const log = await open();
    return {
      log,
      reopen: open,
      takeOver: async () => {
        // As if n1's lease expired: etcd deletes its ownership key; n2 claims the next epoch.
        await releaseBucket(connection, bucket, token);
        token = await claimed(keys, 'n2');
        return open();
      },
      cleanup: async () => {
        for (const l of opened) await l.close();
      },
    };
  },
});

describe('etcd log', () => {
  it('claims each bucket only while it has no owner, with an epoch one higher each time', async () => {
    const keys = freshKeys();
    const first = await claimed(keys, 'n1');
    expect(first.epoch).toBe(1);
    expect(await claimBucket(connection, keys.bucket(0), 'n2', undefined)).toBeUndefined();
    expect(await releaseBucket(connection, keys.bucket(0), first)).toBe(true);
    const second = await claimed(keys, 'n2');
    expect(second.epoch).toBe(2);
    expect(await releaseBucket(connection, keys.bucket(0), first)).toBe(false);
    await expect(
      EtcdLog.open({ connection, keys: keys.bucket(0), owner: first }),
    ).rejects.toSatisfy((e) => isOffsetStoreError(e, 'NOT_COORDINATOR'));
  });

  it('resolves appends whose answer is lost by reading back: each lands exactly once or is rejected, and the log goes on densely', async () => {
    const keys = freshKeys();
    const token = await claimed(keys, 'n1');
    // Through e1 alone: a call sent to another member (picked at random) would be answered.
    const impatient = new EtcdConnection({ endpoints: [etcd.endpoints[0]!], callTimeoutMs: 150 });
    try {
      const log = await EtcdLog.open({
        connection: impatient,
        keys: keys.bucket(0),
        owner: token,
        resolveTimeoutMs: 20_000,
      });
      expect(await log.append(testBatch(0))).toBe(0);
      expect(etcd.memberNames[0]).toBe('e1');
      etcd.kill('e1', 'SIGSTOP');
      const pending = Array.from({ length: 5 }, (_, n) => log.append(testBatch(1 + n)));
      await new Promise((resolve) => setTimeout(resolve, 600));
      etcd.kill('e1', 'SIGCONT');
      const results = await Promise.allSettled(pending);
      const resolved = results
        .filter((r) => r.status === 'fulfilled')
        .map((r) => (r as PromiseFulfilledResult<number>).value);
      for (const r of results) {
        if (r.status === 'rejected')
          expect(
            isOffsetStoreError(r.reason, 'REQUEST_TIMED_OUT') && r.reason.retriable,
            String(r.reason),
          ).toBe(true);
      }
      expect(log.failed).toBe(false);
      expect(log.unknownOutcomes).toBeGreaterThanOrEqual(1);
      const next = await log.append(testBatch(9));
      const found = await scanAll(log);
      expect(found.map((f) => f.logOffset)).toEqual(Array.from({ length: next + 1 }, (_, i) => i));
      // Every resolved append is there once, byte for byte; every rejected one is nowhere.
      const contents = found.map((f) => f.bytes);
      for (let n = 0; n < 5; n++) {
        const matching = contents.filter((b) =>
          b.subarray(48).equals(testBatch(1 + n).subarray(48)),
        );
        expect(matching.length, `batch ${1 + n}`).toBe(results[n]!.status === 'fulfilled' ? 1 : 0);
      }
      expect(resolved).toEqual([...resolved].sort((a, b) => a - b));
      await log.close();
    } finally {
      etcd.kill('e1', 'SIGCONT');
      impatient.close();
    }
  });

  it('resolves a round whose own fence landed unanswered: the round is rejected as never landing, and the log goes on', async () => {
    // The append is cut off before etcd applies it; the first fence transaction is applied but its
    // answer is lost; the second fence finds `next` rewritten to the round's start and no batch
    // there: that is this log's own fence, not another writer.
    const keys = freshKeys();
    const token = await claimed(keys, 'n1');
    const lost = (what: string) => etcdError(new Error('deadline exceeded'), what);
    const script: ('drop' | 'applyThenLose')[] = [];
    const txn: EtcdConnection['txn'] = async (request, what) => {
      const step = script.shift();
      if (step === 'drop') throw lost(what);
      const res = await connection.txn(request, what);
      if (step === 'applyThenLose') throw lost(what);
      return res;
    };
    const log = await EtcdLog.open({
      connection: overrideConnection(connection, { txn }),
      keys: keys.bucket(0),
      owner: token,
    });
    expect(await log.append(testBatch(0))).toBe(0);
    script.push('drop', 'applyThenLose');
    const rejected = await log.append(testBatch(1)).catch((e: unknown) => e);
    expect(isOffsetStoreError(rejected, 'REQUEST_TIMED_OUT'), String(rejected)).toBe(true);
    expect((rejected as OffsetStoreError).retriable).toBe(true);
    expect(log.failed).toBe(false);
    expect(await log.append(testBatch(2))).toBe(1);
    const found = await scanAll(log);
    expect(found.map((f) => f.logOffset)).toEqual([0, 1]);
    expect(found[1]!.bytes.subarray(48).equals(testBatch(2).subarray(48))).toBe(true);
    await log.close();
  });

  it('stops a log whose round landed unanswered while its node lost the bucket and claimed it again: the same node under a new epoch is another owner', async () => {
    const keys = freshKeys();
    const bucket = keys.bucket(0);
    const first = await claimed(keys, 'n1');
    let reclaim = false;
    const txn: EtcdConnection['txn'] = async (request, what) => {
      const res = await connection.txn(request, what);
      if (reclaim) {
        reclaim = false;
        // The round is applied; before its answer arrives, n1's ownership goes (as when its lease
        // expires) and n1 claims the bucket again, under epoch 2.
        expect(await releaseBucket(connection, bucket, first)).toBe(true);
        expect((await claimed(keys, 'n1')).epoch).toBe(2);
        throw etcdError(new Error('deadline exceeded'), what);
      }
      return res;
    };
    const log = await EtcdLog.open({
      connection: overrideConnection(connection, { txn }),
      keys: bucket,
      owner: first,
    });
    expect(await log.append(testBatch(0))).toBe(0);
    reclaim = true;
    // Landed under the epoch it was sent under: acknowledged, and then the log stops.
    expect(await log.append(testBatch(1))).toBe(1);
    expect(log.failed).toBe(true);
    await expect(log.append(testBatch(2))).rejects.toSatisfy((e) =>
      isOffsetStoreError(e, 'NOT_COORDINATOR'),
    );
    await log.close();
  });

  it('refuses the queued appends of a log whose owner gives it up, and settles only the round in flight', async () => {
    const keys = freshKeys();
    const token = await claimed(keys, 'n1');
    let slowRounds = 0;
    const txn: EtcdConnection['txn'] = async (request, what) => {
      if (what.startsWith('appending')) {
        slowRounds++;
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      return connection.txn(request, what);
    };
    const log = await EtcdLog.open({
      connection: overrideConnection(connection, { txn }),
      keys: keys.bucket(0),
      owner: token,
      roundBatchesMax: 1,
    });
    const first = log.append(testBatch(0));
    await new Promise((resolve) => setTimeout(resolve, 50)); // its round is in flight
    const queued = Array.from({ length: 4 }, (_, n) => log.append(testBatch(1 + n)));
    log.refuseAppends(new OffsetStoreError('NOT_COORDINATOR', 'giving the bucket up'));
    for (const r of await Promise.allSettled(queued))
      expect(r.status === 'rejected' && isOffsetStoreError(r.reason, 'NOT_COORDINATOR')).toBe(true);
    await expect(log.append(testBatch(9))).rejects.toSatisfy((e) =>
      isOffsetStoreError(e, 'NOT_COORDINATOR'),
    );
    expect(await first).toBe(0);
    await log.close();
    expect(slowRounds).toBe(1);
    const reader = await EtcdLog.open({ connection, keys: keys.bucket(0), owner: token });
    expect((await scanAll(reader)).map((f) => f.logOffset)).toEqual([0]);
    await reader.close();
  });

  it('refuses to open a log holding a batch of a format this version cannot read, though its checksum matches', async () => {
    const keys = freshKeys();
    const bucket = keys.bucket(0);
    const token = await claimed(keys, 'n1');
    const log = await EtcdLog.open({ connection, keys: bucket, owner: token });
    for (let n = 0; n < 3; n++) await log.append(testBatch(n));
    await log.close();
    // Batch 1 as a later version might write it: another schema id, checksummed again.
    const stored = await connection.range({ key: Buffer.from(bucket.logEntry(1)) }, 'test');
    const batch = Buffer.from(stored.kvs[0]!.value);
    batch.writeInt16LE(7, 29);
    sealBatch(batch, 1);
    await connection.txn(
      { success: [{ request_put: { key: Buffer.from(bucket.logEntry(1)), value: batch } }] },
      'test',
    );
    await expect(EtcdLog.open({ connection, keys: bucket, owner: token })).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringMatching(
        /batch 1: checksum matches but it does not decode: unknown schema id 7/,
      ),
    });
  });

  it('refuses to open a log whose next key is missing or damaged while it holds batches, instead of serving it empty and writing over it', async () => {
    const keys = freshKeys();
    const bucket = keys.bucket(0);
    const token = await claimed(keys, 'n1');
    const log = await EtcdLog.open({ connection, keys: bucket, owner: token });
    for (let n = 0; n < 3; n++) await log.append(testBatch(n));
    await log.close();
    const put = (value: string) =>
      connection.txn(
        {
          success: [{ request_put: { key: Buffer.from(bucket.next), value: Buffer.from(value) } }],
        },
        'test',
      );
    await connection.txn(
      { success: [{ request_delete_range: { key: Buffer.from(bucket.next) } }] },
      'test',
    );
    await expect(EtcdLog.open({ connection, keys: bucket, owner: token })).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringMatching(/next.* is missing, but the log holds batches/),
    });
    await put('two');
    await expect(EtcdLog.open({ connection, keys: bucket, owner: token })).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringMatching(/next.* cannot be read/),
    });
    // Put back, it opens with every batch.
    await put('3');
    const reopened = await EtcdLog.open({ connection, keys: bucket, owner: token });
    expect((await scanAll(reopened)).length).toBe(3);
    await reopened.close();
  });

  it("refuses a batch over etcd's request limit before sending anything", async () => {
    const keys = freshKeys();
    const log = await EtcdLog.open({
      connection,
      keys: keys.bucket(0),
      owner: await claimed(keys, 'n1'),
    });
    await expect(log.append(Buffer.alloc(2 * 1024 * 1024))).rejects.toSatisfy((e) =>
      isOffsetStoreError(e, 'INVALID_REQUEST'),
    );
    expect(await log.append(testBatch(0))).toBe(0);
    await log.close();
  });

  it("recovers a log of large batches, whose pages are larger than a gRPC message's default limit", async () => {
    const keys = freshKeys();
    const token = await claimed(keys, 'n1');
    const log = await EtcdLog.open({ connection, keys: keys.bucket(0), owner: token });
    // 300 batches of ~20 KB (a group committing ~400 partitions at a time), then 12 of ~900 KB.
    const batches = [
      ...Array.from({ length: 300 }, (_, n) => testBatch(n, 400)),
      ...Array.from({ length: 12 }, (_, n) => testBatch(300 + n, 15_000)),
    ];
    expect(batches.at(-1)!.length).toBeGreaterThan(800 * 1024);
    expect(batches.at(-1)!.length).toBeLessThan(1024 * 1024);
    await Promise.all(batches.map((b) => log.append(b)));
    await log.close();
    await releaseBucket(connection, keys.bucket(0), token);
    // With the default response limit, then with one that takes two large batches at most.
    for (const responseBytesMax of [undefined, 2 * 1024 * 1024]) {
      const reader = new EtcdConnection({ endpoints: etcd.endpoints, responseBytesMax });
      const owner = await claimed(keys, 'n2');
      const seen: number[] = [];
      const reopened = await EtcdLog.open(
        { connection: reader, keys: keys.bucket(0), owner },
        { fromLogOffset: 0, visit: (buf, position, logOffset) => void seen.push(logOffset) },
      );
      expect(seen).toEqual(batches.map((_, i) => i));
      expect((await scanAll(reopened)).length).toBe(batches.length);
      await reopened.close();
      await releaseBucket(connection, keys.bucket(0), owner);
      reader.close();
    }
  });

  it("recovers while another bucket's truncation compacts etcd's history between two pages of its log", async () => {
    const keys = freshKeys();
    const token = await claimed(keys, 'n1');
    const log = await EtcdLog.open({ connection, keys: keys.bucket(0), owner: token });
    await Promise.all(Array.from({ length: 600 }, (_, n) => log.append(testBatch(n))));
    await log.close();
    await releaseBucket(connection, keys.bucket(0), token);
    // Every range read after the first compacts etcd's history to the newest revision first, as
    // another owner's truncation may at any moment.
    let reads = 0;
    const range: EtcdConnection['range'] = async (request, what) => {
      if (reads++ > 0) {
        const put = await connection.txn(
          { success: [{ request_put: { key: Buffer.from('/other'), value: Buffer.from('x') } }] },
          'test',
        );
        await connection.compact(put.header.revision, 'test');
      }
      return connection.range(request, what);
    };
    const compacting = overrideConnection(connection, { range });
    const seen: number[] = [];
    const reopened = await EtcdLog.open(
      { connection: compacting, keys: keys.bucket(0), owner: await claimed(keys, 'n2') },
      { fromLogOffset: 0, visit: (buf, position, logOffset) => void seen.push(logOffset) },
    );
    expect(reads).toBeGreaterThan(2);
    expect(seen).toEqual(Array.from({ length: 600 }, (_, i) => i));
    await reopened.close();
  });

  it("truncates below a checkpoint and compacts etcd's history, so the deleted batches take no space", async () => {
    const keys = freshKeys();
    const token = await claimed(keys, 'n1');
    const log = await EtcdLog.open({ connection, keys: keys.bucket(0), owner: token });
    for (let n = 0; n < 10; n++) await log.append(testBatch(n));
    const before = await connection.range({ key: Buffer.from(keys.bucket(0).next) }, 'test');
    const freed = await log.truncateBelow(8);
    expect(freed).toBeGreaterThan(0);
    expect((await scanAll(log)).map((f) => f.logOffset)).toEqual([8, 9]);
    await expect(
      connection.range(
        { key: Buffer.from(keys.bucket(0).logEntry(0)), revision: Number(before.header.revision) },
        'test',
      ),
    ).rejects.toThrow(/compacted/);
    await releaseBucket(connection, keys.bucket(0), token);
    const reopened = await EtcdLog.open(
      { connection, keys: keys.bucket(0), owner: await claimed(keys, 'n2') },
      { fromLogOffset: 8 },
    );
    expect(reopened.nextOffset).toBe(10);
    expect(reopened.firstOffset).toBe(8);
    await log.close();
    await reopened.close();
  });
});

describe("etcd log at etcd's space quota", () => {
  let small: EtcdCluster;
  let smallConnection: EtcdConnection;
  beforeAll(async () => {
    small = await EtcdCluster.start({ members: 1, quotaBackendBytes: 4 * 1024 * 1024 });
    smallConnection = new EtcdConnection({ endpoints: small.endpoints });
  });
  afterAll(async () => {
    smallConnection?.close();
    await small?.stop();
  });

  it('turns the NOSPACE alarm into a retriable REPLICA_NO_SPACE that rejects the round only, landing nothing', async () => {
    const keys = new ClusterKeys('/quota/');
    const token = await claimBucket(smallConnection, keys.bucket(0), 'n1', undefined);
    const log = await EtcdLog.open({
      connection: smallConnection,
      keys: keys.bucket(0),
      owner: token!,
    });
    const big = () => {
      const batch = testBatch(1, 1);
      const padded = Buffer.alloc(512 * 1024);
      batch.copy(padded);
      padded.writeUInt32LE(padded.length - 4, 0); // a batch whose records end early: etcd stores bytes, the test never decodes it
      return padded;
    };
    let refusal: unknown;
    let landed = 0;
    for (let i = 0; i < 40 && refusal === undefined; i++) {
      try {
        landed = (await log.append(big())) + 1;
      } catch (error) {
        refusal = error;
      }
    }
    expect(isOffsetStoreError(refusal, 'REPLICA_NO_SPACE'), String(refusal)).toBe(true);
    expect((refusal as { retriable: boolean }).retriable).toBe(true);
    expect(log.failed).toBe(false);
    expect(log.nextOffset).toBe(landed);
    // etcd holds exactly what was acknowledged: the round that crossed the quota is applied by etcd
    // and then answered NOSPACE, so it must have been acknowledged, not rejected.
    const reader = await EtcdLog.open({
      connection: smallConnection,
      keys: keys.bucket(0),
      owner: token!,
    });
    expect(reader.nextOffset).toBe(landed);
    await reader.close();
    await log.close();
  });

  it('resolves an append answered NOSPACE by reading back: acknowledged when etcd applied it, rejected when it did not, and the log goes on', async () => {
    const keys = new ClusterKeys('/quota-injected/');
    const token = await claimBucket(connection, keys.bucket(0), 'n1', undefined);
    const noSpace = () =>
      etcdError(new Error('etcdserver: mvcc: database space exceeded'), 'appending');
    let answer: 'applied' | 'refused' | undefined;
    const injected = overrideConnection(connection, {
      txn: async (request, what) => {
        const mode = answer;
        answer = undefined;
        if (mode === 'refused') throw noSpace();
        const res = await connection.txn(request, what);
        if (mode === 'applied') throw noSpace(); // etcd applies, then answers NOSPACE
        return res;
      },
    });
    const log = await EtcdLog.open({ connection: injected, keys: keys.bucket(0), owner: token! });
    expect(await log.append(testBatch(0))).toBe(0);
    answer = 'applied';
    expect(await log.append(testBatch(1))).toBe(1);
    answer = 'refused';
    await expect(log.append(testBatch(2))).rejects.toSatisfy((e) =>
      isOffsetStoreError(e, 'REPLICA_NO_SPACE'),
    );
    expect(await log.append(testBatch(3))).toBe(2);
    expect(log.failed).toBe(false);
    const reader = await EtcdLog.open({ connection, keys: keys.bucket(0), owner: token! });
    const found = await scanAll(reader);
    expect(found.map((f) => f.bytes.subarray(48))).toEqual(
      [0, 1, 3].map((n) => testBatch(n).subarray(48)),
    );
    await reader.close();
    await log.close();
  });
});
