/**
 * Where a cluster keeps its state in etcd: every key lives under one prefix (default
 * `/offset-store/`), so several clusters can share an etcd cluster.
 *
 * | key | value | lease |
 * |---|---|---|
 * | `<prefix>config` | JSON `{ bucketCount }`, written once by the first node | none |
 * | `<prefix>topics` | the cluster's topic catalog, in the catalog file's format (cluster-topics.ts) | none |
 * | `<prefix>nodes/<nodeId>` | JSON NodeInfo: the node's Kafka id and address | the node's |
 * | `<prefix>owners/<nnnnn>` | JSON `{ nodeId, epoch }`: the bucket's fencing token | the owner's |
 * | `<prefix>buckets/<nnnnn>/epoch` | the last coordinator epoch given out (decimal) | none |
 * | `<prefix>buckets/<nnnnn>/next` | the log offset the next batch gets (decimal) | none |
 * | `<prefix>buckets/<nnnnn>/log/<20 digits>` | one sealed KvRecordBatch at that log offset | none |
 * | `<prefix>buckets/<nnnnn>/checkpoint` | JSON CheckpointPointer: the live checkpoint | none |
 * | `<prefix>buckets/<nnnnn>/checkpoints/<id>/<6 digits>` | one chunk of a checkpoint image | none |
 *
 * Log keys sort by log offset (zero-padded), so a range read returns batches in log order. Owners
 * have a prefix of their own, so one range read lists every bucket's owner.
 */

/** The default key prefix of a cluster. */
export const DEFAULT_CLUSTER_PREFIX = '/offset-store/';

/** The end of the range of keys that start with `prefix` (etcd's range_end for a prefix). */
export function prefixEnd(prefix: string): Buffer {
  const bytes = Buffer.from(prefix);
  for (let i = bytes.length - 1; i >= 0; i--) {
    if (bytes[i]! < 0xff) {
      const end = Buffer.from(bytes.subarray(0, i + 1));
      end[i]!++;
      return end;
    }
  }
  return Buffer.from([0]);
}

/** The keys of one cluster. */
export class ClusterKeys {
  /** The prefix every key starts with; ends with '/'. */
  readonly prefix: string;

  constructor(prefix = DEFAULT_CLUSTER_PREFIX) {
    if (!prefix.endsWith('/'))
      throw new RangeError(`cluster key prefix must end with '/': ${JSON.stringify(prefix)}`);
    this.prefix = prefix;
  }

  /** The cluster's fixed configuration. */
  get config(): string {
    return `${this.prefix}config`;
  }

  /** The cluster's topic catalog. */
  get topics(): string {
    return `${this.prefix}topics`;
  }

  /** Prefix of every node's registration. */
  get nodes(): string {
    return `${this.prefix}nodes/`;
  }

  /** One node's registration. */
  node(nodeId: string): string {
    return `${this.nodes}${nodeId}`;
  }

  /** Prefix of every bucket's ownership key. */
  get owners(): string {
    return `${this.prefix}owners/`;
  }

  /** The bucket an ownership key names. */
  bucketOfOwnerKey(key: Buffer): number {
    return Number(key.subarray(Buffer.byteLength(this.owners)).toString());
  }

  /** The keys of one offsets-bucket. */
  bucket(index: number): BucketKeys {
    const name = String(index).padStart(5, '0');
    return new BucketKeys(`${this.prefix}buckets/${name}/`, `${this.owners}${name}`);
  }
}

/** The keys of one offsets-bucket. */
export class BucketKeys {
  /** Prefix of the bucket's keys (its ownership key excepted). */
  readonly prefix: string;
  /** The ownership key (the fencing token), attached to the owner's lease. */
  readonly owner: string;

  constructor(prefix: string, owner: string) {
    this.prefix = prefix;
    this.owner = owner;
  }

  /** The last coordinator epoch given out. */
  get epoch(): string {
    return `${this.prefix}epoch`;
  }

  /** The next log offset. */
  get next(): string {
    return `${this.prefix}next`;
  }

  /** Prefix of the log's batches. */
  get log(): string {
    return `${this.prefix}log/`;
  }

  /** The batch at `logOffset`. */
  logEntry(logOffset: number): string {
    return `${this.log}${String(logOffset).padStart(20, '0')}`;
  }

  /** The log offset a log key names. */
  logOffsetOf(key: Buffer): number {
    return Number(key.subarray(Buffer.byteLength(this.log)).toString());
  }

  /** The pointer to the live checkpoint. */
  get checkpoint(): string {
    return `${this.prefix}checkpoint`;
  }

  /** Prefix of every checkpoint's chunks. */
  get checkpoints(): string {
    return `${this.prefix}checkpoints/`;
  }

  /** Prefix of one checkpoint's chunks. */
  checkpointChunks(id: string): string {
    return `${this.checkpoints}${id}/`;
  }

  /** One chunk of a checkpoint. */
  checkpointChunk(id: string, index: number): string {
    return `${this.checkpointChunks(id)}${String(index).padStart(6, '0')}`;
  }
}
