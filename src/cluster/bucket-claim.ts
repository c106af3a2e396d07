/**
 * Claiming and releasing an offsets-bucket in etcd. A claim succeeds only while the bucket has no
 * owner (the previous owner released it, or its lease expired and etcd deleted the key), and takes
 * the next coordinator epoch in the same transaction, so epochs only grow and two claims never get
 * the same one. The ownership key is attached to the claimer's lease: if the node stops renewing
 * it, etcd deletes the key, every fenced write of the old owner fails its compare, and another node
 * may claim the bucket.
 */
import { OffsetStoreError } from '../errors/index.js';
import type { BucketKeys } from './cluster-keys.js';
import type { EtcdConnection } from './etcd-connection.js';
import { rangeOp } from './etcd-log.js';
import { ownerToken, parseOwnerToken, type OwnerToken } from './owner-token.js';

/**
 * Claims the bucket for `nodeId` under `leaseId` (a decimal lease id; undefined for no lease, in
 * tests); resolves with the new token, or undefined when someone owns the bucket now.
 */
export async function claimBucket(
  connection: EtcdConnection,
  keys: BucketKeys,
  nodeId: string,
  leaseId: string | undefined,
): Promise<OwnerToken | undefined> {
  const read = await connection.range(
    { key: Buffer.from(keys.epoch) },
    `reading the epoch of ${keys.prefix}`,
  );
  const current = read.kvs[0];
  const epoch = current === undefined ? 0 : Number(current.value.toString());
  if (!Number.isSafeInteger(epoch) || epoch < 0)
    throw new OffsetStoreError(
      'CORRUPT_MESSAGE',
      `${keys.epoch} holds ${JSON.stringify(current?.value.toString())}, not an epoch`,
    );
  const token = ownerToken(nodeId, epoch + 1);
  const res = await connection.txn(
    {
      compare: [
        { key: Buffer.from(keys.owner), target: 'Create', result: 'Equal', create_revision: 0 },
        {
          key: Buffer.from(keys.epoch),
          target: 'Mod',
          result: 'Equal',
          mod_revision: current === undefined ? 0 : String(current.mod_revision),
        },
      ],
      success: [
        { request_put: { key: Buffer.from(keys.epoch), value: Buffer.from(String(token.epoch)) } },
        { request_put: { key: Buffer.from(keys.owner), value: token.value, lease: leaseId ?? 0 } },
      ],
      failure: [rangeOp(keys.owner)],
    },
    `claiming ${keys.prefix}`,
  );
  return res.succeeded ? token : undefined;
}

/** Gives the bucket up, if `token` still owns it (a node leaving cleanly, so a successor need not wait for its lease). */
export async function releaseBucket(
  connection: EtcdConnection,
  keys: BucketKeys,
  token: OwnerToken,
): Promise<boolean> {
  const res = await connection.txn(
    {
      compare: [
        { key: Buffer.from(keys.owner), target: 'Value', result: 'Equal', value: token.value },
      ],
      success: [{ request_delete_range: { key: Buffer.from(keys.owner) } }],
    },
    `releasing ${keys.prefix}`,
  );
  return res.succeeded;
}

/** The bucket's current owner, if any. */
export async function currentOwner(
  connection: EtcdConnection,
  keys: BucketKeys,
): Promise<OwnerToken | undefined> {
  const res = await connection.range(
    { key: Buffer.from(keys.owner) },
    `reading the owner of ${keys.prefix}`,
  );
  const kv = res.kvs[0];
  return kv === undefined ? undefined : parseOwnerToken(kv.value);
}
