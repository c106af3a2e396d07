/**
 * Checkpoints of a bucket in etcd against a real single-member etcd: what a checkpoint leaves
 * behind, and a pointer that only moves from the value its writer read.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ClusterKeys,
  EtcdConnection,
  claimBucket,
  etcdError,
  prefixEnd,
  readEtcdCheckpoint,
  writeEtcdCheckpoint,
  type OwnerToken,
} from '../../src/cluster/index.js';
import { loadChecksum } from '../../src/codec/index.js';
import { isOffsetStoreError } from '../../src/errors/index.js';
import { OffsetsTableState } from '../../src/kv/index.js';
import { EtcdCluster } from '../support/etcd-cluster.js';
import { testBatch } from '../support/log-fixtures.js';
import { overrideConnection } from './connection-override.js';

let etcd: EtcdCluster;
let connection: EtcdConnection;
let prefixes = 0;

beforeAll(async () => {
  await loadChecksum();
  etcd = await EtcdCluster.start({ members: 1 });
  connection = new EtcdConnection({ endpoints: etcd.endpoints });
});

afterAll(async () => {
  connection?.close();
  await etcd?.stop();
});

async function owned(): Promise<{ keys: ClusterKeys; owner: OwnerToken }> {
  const keys = new ClusterKeys(`/checkpoint-test-${process.pid}-${prefixes++}/`);
  const owner = await claimBucket(connection, keys.bucket(0), 'n1', undefined);
  return { keys, owner: owner! };
}

/** A state with `batches` batches applied. */
function stateOf(batches: number): OffsetsTableState {
  const state = new OffsetsTableState();
  for (let n = 0; n < batches; n++) state.applyBatch(testBatch(n), 0, n);
  return state;
}

/** The ids of the checkpoints whose chunks are in etcd. */
async function chunkIds(keys: ClusterKeys): Promise<string[]> {
  const all = keys.bucket(0).checkpoints;
  const res = await connection.range(
    { key: Buffer.from(all), range_end: prefixEnd(all), keys_only: true },
    'test',
  );
  const ids = res.kvs.map((kv) => kv.key.toString().slice(all.length).split('/')[0]!);
  return [...new Set(ids)];
}

describe('etcd checkpoints', () => {
  it('leave only the live checkpoint in etcd, also when an earlier one stopped half-way', async () => {
    const { keys, owner } = await owned();
    const bucket = keys.bucket(0);
    const first = await writeEtcdCheckpoint(connection, bucket, owner, stateOf(5), 1000);
    // What a checkpoint whose writing stopped after its first chunk leaves: chunks no pointer names.
    await connection.txn(
      {
        success: [
          {
            request_put: {
              key: Buffer.from(bucket.checkpointChunk('1-9-999', 0)),
              value: Buffer.from('partial'),
            },
          },
        ],
      },
      'test',
    );
    expect((await chunkIds(keys)).sort()).toEqual([first.id, '1-9-999'].sort());
    const second = await writeEtcdCheckpoint(connection, bucket, owner, stateOf(8), 2000);
    expect(await chunkIds(keys)).toEqual([second.id]);
    const loaded = await readEtcdCheckpoint(connection, bucket);
    expect(loaded?.pointer).toEqual(second);
    expect(loaded?.state.appliedLogOffset).toBe(7);
  });

  it('do not move the pointer if it changed since it was read (a lost switch that landed late)', async () => {
    const { keys, owner } = await owned();
    const bucket = keys.bucket(0);
    const newer = await writeEtcdCheckpoint(connection, bucket, owner, stateOf(8), 2000);
    // Between reading the pointer and switching it, the pointer changes.
    let moved = false;
    const racing = overrideConnection(connection, {
      txn: async (request, what) => {
        if (!moved && what.startsWith('switching the checkpoint pointer')) {
          moved = true;
          await writeEtcdCheckpoint(connection, bucket, owner, stateOf(9), 3000);
        }
        return connection.txn(request, what);
      },
    });
    await expect(writeEtcdCheckpoint(racing, bucket, owner, stateOf(3), 1000)).rejects.toSatisfy(
      (e) => isOffsetStoreError(e, 'REQUEST_TIMED_OUT'),
    );
    const loaded = await readEtcdCheckpoint(connection, bucket);
    expect(loaded?.pointer.logOffset).toBe(9);
    expect(loaded?.pointer.id).not.toBe(newer.id);
  });

  it("never let an earlier checkpoint's cleanup whose answer was lost delete a later checkpoint's chunks", async () => {
    const { keys, owner } = await owned();
    const bucket = keys.bucket(0);
    // The first checkpoint's cleanup gets no answer and is held back; it reaches etcd while the
    // second checkpoint is being written (after its chunks, before its pointer switch).
    let held: { request: Parameters<EtcdConnection['txn']>[0]; what: string } | undefined;
    const late = overrideConnection(connection, {
      txn: async (request, what) => {
        if (held === undefined && what.startsWith('deleting the other checkpoints')) {
          held = { request, what };
          throw etcdError(new Error('deadline exceeded'), what);
        }
        if (held !== undefined && what.startsWith('switching the checkpoint pointer')) {
          const { request: lost, what: lostWhat } = held;
          await connection.txn(lost, lostWhat).catch(() => undefined);
        }
        return connection.txn(request, what);
      },
    });
    await expect(writeEtcdCheckpoint(late, bucket, owner, stateOf(5), 1000)).rejects.toSatisfy(
      (e) => isOffsetStoreError(e, 'REQUEST_TIMED_OUT'),
    );
    const second = await writeEtcdCheckpoint(late, bucket, owner, stateOf(8), 2000);
    const loaded = await readEtcdCheckpoint(connection, bucket);
    expect(loaded?.pointer).toEqual(second);
    expect(loaded?.state.appliedLogOffset).toBe(7);
    expect(await chunkIds(keys)).toEqual([second.id]);
  });
});
