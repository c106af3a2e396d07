/**
 * ClusterNode: one node of a cluster. It registers itself in etcd under a lease, spreads the
 * offsets-buckets over the live nodes by rendezvous hashing, claims the buckets that fall to it,
 * recovers each (checkpoint, then the log in etcd) into the hosting OffsetStore it serves from, and
 * gives up the buckets that fall to another node.
 *
 * Invariants:
 * - A bucket has at most one owner at a time: a claim succeeds only while its ownership key is
 *   absent (released, or deleted by etcd when the owner's lease expired), and every write of an owner
 *   compares the key with its token. A paused owner's late writes fail their compare.
 * - A node serves a bucket only while it owns it and its lease is confirmed (NodeLease.valid): the
 *   hosting store's serving guard asks, so after a pause past the lease not even a fetch from memory
 *   is answered.
 * - A bucket is served only after it is fully recovered: checkpoint restored, log replayed, groups
 *   restored as their last snapshots had them (OffsetsBucket.fromTable).
 * - When the lease is lost every bucket stops at once (its log fail-stops with NOT_COORDINATOR, the
 *   store unhosts it); the node then registers again with a new lease and claims anew. A bucket
 *   still being recovered or hosted then is never served: its take checks, once hosting is done,
 *   that the lease it claimed under is still the node's and was not lost, and gives it up if not.
 * - One process per node id: a registration is written only while the node's key is absent or
 *   under this node's own lease. A second process started under a live node's id waits for the key
 *   to go (it does when a crashed predecessor's lease expires), then fails to start
 *   (INVALID_CONFIG); without this, each would release the other's ownership keys (they name the
 *   same node) and both would serve the same buckets.
 * - One node per Kafka broker id: a node that finds its broker id registered first by another live
 *   node fails to start (INVALID_CONFIG), as Kafka clients would take the two for one broker. A
 *   running node that finds it so when it registers again (another node started under its broker
 *   id while its lease was lost) gives up its buckets, unregisters and stays out, with a warning,
 *   until that registration goes.
 * - A node serves a bucket only while etcd's ownership key holds its token: one that holds another
 *   (or none) makes the node give the bucket up at the next reconcile.
 *
 * Reconciling, every `reconcileIntervalMs` (a step at a time, so one bucket's failure does not stop
 * the others):
 * 1. Read the live nodes and every bucket's owner (two range reads). If this node is not among the
 *    live nodes while its lease lives (its registration's answer was lost), register again.
 * 2. Give up each owned bucket that rendezvous hashing puts elsewhere, or whose log failed:
 *    unhost it (requests get NOT_COORDINATOR), then delete its ownership key. Release every
 *    ownership key that names this node for a bucket it does not serve: a claim whose answer was
 *    lost, a release that failed, or an earlier run of this node. Such a key would otherwise keep
 *    the bucket from everyone, this node included, for as long as its lease lives; deleting it is
 *    safe, since nothing serves under it and every fenced write compares the key.
 * 3. Claim each unowned bucket that falls to this node, recover it and host it.
 * 4. Checkpoint each owned bucket whose log holds `checkpointBatches` batches or more past its
 *    checkpoint, then truncate its log below the checkpoint.
 */
import { loadChecksum, readBatchRecordCount } from '../codec/index.js';
import { OffsetStoreError, isOffsetStoreError } from '../errors/index.js';
import { OffsetsTable, OffsetsTableState, type OffsetsTableRecovery } from '../kv/index.js';
import type { OffsetStore } from '../store.js';
import { claimBucket, releaseBucket } from './bucket-claim.js';
import { ClusterKeys, prefixEnd } from './cluster-keys.js';
import { checkpointPointerOf, readEtcdCheckpoint, writeEtcdCheckpoint } from './etcd-checkpoint.js';
import { EtcdConnection } from './etcd-connection.js';
import { EtcdLog, nextLogOffsetOf } from './etcd-log.js';
import { NodeLease, checkLeaseTtl } from './node-lease.js';
import { parseOwnerToken, type OwnerToken } from './owner-token.js';
import { warningsTo } from '../store-options.js';
import { rendezvousOwner } from './rendezvous.js';
import { readClusterTopics } from './cluster-topics.js';

/** A bucket whose data is damaged is tried again after this long, doubling each time, up to the max. */
const DAMAGED_RETRY_MS_MIN = 1_000;
const DAMAGED_RETRY_MS_MAX = 60_000;

/** What a node publishes about itself. */
export interface NodeInfo {
  /** The node's id (unique in the cluster). */
  nodeId: string;
  /** Its Kafka broker id (Metadata, FindCoordinator). */
  brokerId: number;
  /** Host its Kafka clients connect to. */
  host: string;
  /** Port its Kafka clients connect to. */
  port: number;
  /**
   * Its address on each of its listeners, by listener name (a client is answered with the
   * addresses of the listener it connected to); absent: `host`/`port` on every listener.
   */
  listeners?: Readonly<Record<string, { host: string; port: number }>>;
}

/** Options of a cluster node. */
export interface ClusterNodeOptions {
  /** etcd client URLs. */
  endpoints: readonly string[];
  /** Key prefix of the cluster in etcd; default `/offset-store/`. */
  prefix?: string;
  /** What this node publishes. */
  node: NodeInfo;
  /** The hosting store (OffsetStore.openHosted) the node serves its buckets from. */
  store: OffsetStore;
  /**
   * Lease TTL, whole seconds; default 3. Failover takes about this long plus one reconcile
   * interval.
   */
  leaseTtlSeconds?: number;
  /** How often the node reconciles ownership, ms; default 250. */
  reconcileIntervalMs?: number;
  /** Deadline of every etcd call, ms; default 2000. */
  callTimeoutMs?: number;
  /** Batches past the checkpoint at which a bucket is checkpointed; default 10,000. */
  checkpointBatches?: number;
  /** Receives problems the node survived. */
  onWarning?: (message: string) => void;
}

interface OwnedBucket {
  bucket: number;
  token: OwnerToken;
  log: EtcdLog;
  table: OffsetsTable;
  checkpointLogOffset: number;
}

/** What `status` reports of one bucket. */
export interface BucketStatus {
  /** The bucket. */
  bucket: number;
  /** Its owner's node id and epoch, if it has one. */
  owner: { nodeId: string; epoch: number } | undefined;
  /** The node rendezvous hashing puts it on. */
  assignedTo: string | undefined;
  /** Its next log offset. */
  nextLogOffset: number;
  /** Log offset of its checkpoint (replay starts there). */
  checkpointLogOffset: number;
  /** Batches of its log in etcd (those at or above the checkpoint, until the next truncation). */
  logBatches: number;
}

/** One topic of the cluster's catalog, as `cluster status` shows it. */
export interface ClusterTopicStatus {
  /** The topic's name. */
  name: string;
  /** The table holding its offsets. */
  tableId: number;
  /** Its partitions. */
  partitions: number;
  /** Its topic id. */
  topicId: string;
}

/** The state of a cluster as `offset-store cluster status` shows it. */
export interface ClusterStatus {
  /** Its offsets-buckets, fixed at creation (0 when no node ever joined). */
  bucketCount: number;
  /** The cluster id its nodes report, once a node has written the topic catalog. */
  clusterId: string | undefined;
  /** The topics of its catalog, by name. */
  topics: ClusterTopicStatus[];
  /** The live nodes. */
  nodes: NodeInfo[];
  /** Every bucket. */
  buckets: BucketStatus[];
}

/** A node of a cluster. */
export class ClusterNode {
  readonly #options: ClusterNodeOptions;
  readonly #connection: EtcdConnection;
  readonly #keys: ClusterKeys;
  readonly #owned = new Map<number, OwnedBucket>();
  #lease: NodeLease | undefined;
  #nodes: NodeInfo[] = [];
  #owners = new Map<number, OwnerToken>();
  #timer: NodeJS.Timeout | undefined;
  #reconciling: Promise<void> | undefined;
  #closed = false;

  private constructor(options: ClusterNodeOptions) {
    this.#options = options;
    this.#connection = new EtcdConnection({
      endpoints: options.endpoints,
      callTimeoutMs: options.callTimeoutMs,
    });
    this.#keys = new ClusterKeys(options.prefix);
    this.#onWarning = warningsTo(options.onWarning);
  }

  /** Joins the cluster: checks its configuration, registers, and starts reconciling (buckets arrive over the next intervals). */
  static async start(options: ClusterNodeOptions): Promise<ClusterNode> {
    checkNodeOptions(options);
    const node = new ClusterNode(options);
    try {
      await node.#checkConfig();
      node.#configAgreed = true;
      options.store.setServingGuard(() => node.#lease?.valid() === true);
      // Long enough for a dead predecessor's lease (same TTL) to expire in etcd.
      const waitMs = 2 * node.#leaseTtlSeconds * 1000 + 1000;
      const waitUntilMs = performance.now() + waitMs;
      while (!(await node.#register())) {
        if (performance.now() >= waitUntilMs) {
          throw new OffsetStoreError(
            'INVALID_CONFIG',
            `node id ${node.nodeId} is registered under ${node.#keys.prefix} by another process, whose lease has lived on for ${waitMs / 1000} s: give each node an id of its own`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      await node.#checkBrokerId();
      await node.reconcile();
    } catch (error) {
      await node.close().catch(() => {});
      throw error;
    }
    node.#arm();
    return node;
  }

  /** This node's id. */
  get nodeId(): string {
    return this.#options.node.nodeId;
  }

  /** The live nodes as of the last reconcile. */
  liveNodes(): readonly NodeInfo[] {
    return this.#nodes;
  }

  /** The node that owns `bucket` as of the last reconcile (this node's own buckets as of now). */
  ownerOf(bucket: number): NodeInfo | undefined {
    if (this.#owned.has(bucket))
      return this.#nodes.find((n) => n.nodeId === this.nodeId) ?? this.#options.node;
    const owner = this.#owners.get(bucket);
    return owner === undefined ? undefined : this.#nodes.find((n) => n.nodeId === owner.nodeId);
  }

  /** Whether this node serves `bucket` now: it owns it, hosts it, and its lease is confirmed. */
  serves(bucket: number): boolean {
    return this.#lease?.valid() === true && this.#owned.has(bucket);
  }

  /** The buckets this node serves now. */
  ownedBuckets(): number[] {
    return [...this.#owned.keys()].sort((a, b) => a - b);
  }

  /** The epoch under which this node owns `bucket`, if it does. */
  epochOf(bucket: number): number | undefined {
    return this.#owned.get(bucket)?.token.epoch;
  }

  async #checkConfig(): Promise<void> {
    const bucketCount = this.#options.store.bucketCount;
    const value = Buffer.from(JSON.stringify({ bucketCount }));
    const res = await this.#connection.txn(
      {
        compare: [
          {
            key: Buffer.from(this.#keys.config),
            target: 'Create',
            result: 'Equal',
            create_revision: 0,
          },
        ],
        success: [{ request_put: { key: Buffer.from(this.#keys.config), value } }],
        failure: [{ request_range: { key: Buffer.from(this.#keys.config) } }],
      },
      'reading the cluster configuration',
    );
    if (res.succeeded) return;
    const existing = res.responses[0]?.response_range?.kvs[0]?.value.toString() ?? '';
    const created = configuredBucketCount(this.#keys.config, existing);
    if (created !== bucketCount) {
      throw new OffsetStoreError(
        'INVALID_CONFIG',
        `bucketCount ${bucketCount} contradicts the cluster under ${this.#keys.prefix}, created with bucketCount ${created}`,
      );
    }
  }

  /**
   * INVALID_CONFIG if another live node registered this node's broker id first (by etcd's creation
   * revision, so of two nodes started together one goes on): Kafka clients would take the two for
   * one broker, and send one's groups to the other.
   */
  async #checkBrokerId(): Promise<void> {
    const listed = await this.#connection.range(
      { key: Buffer.from(this.#keys.nodes), range_end: prefixEnd(this.#keys.nodes) },
      'listing nodes',
    );
    const holder = this.#brokerIdHolder(listed.kvs);
    if (holder !== undefined) throw new OffsetStoreError('INVALID_CONFIG', holder);
  }

  /**
   * Among registrations `kvs`, another node's holding this node's broker id that came first (by
   * creation revision; any, when this node is not registered): what to tell the operator, or
   * undefined when there is none.
   */
  #brokerIdHolder(kvs: readonly { key: Buffer; value: Buffer; create_revision: string }[]) {
    const key = Buffer.from(this.#keys.node(this.nodeId));
    const mine = kvs.find((kv) => kv.key.equals(key));
    const { brokerId } = this.#options.node;
    for (const kv of kvs) {
      const other = kv.key.equals(key) ? undefined : parseNodeInfo(kv.value.toString());
      if (
        other?.brokerId === brokerId &&
        (mine === undefined || BigInt(kv.create_revision) < BigInt(mine.create_revision))
      )
        return `broker id ${brokerId} is registered under ${this.#keys.prefix} by node ${other.nodeId}: give each node a broker id of its own`;
    }
    return undefined;
  }

  /**
   * Registers under the current lease, or a new one if there is none or it was lost; false while
   * another lease holds this node id's key (see #putRegistration).
   */
  async #register(): Promise<boolean> {
    if (this.#lease === undefined || this.#lease.lost) {
      this.#lease = await NodeLease.grant(this.#connection, {
        ttlSeconds: this.#leaseTtlSeconds,
        onLost: (reason) => this.#onLeaseLost(reason),
      });
      this.#leaseIds.add(this.#lease.id);
    }
    return this.#putRegistration(this.#lease);
  }

  /** TTL of this node's leases, seconds. */
  get #leaseTtlSeconds(): number {
    return this.#options.leaseTtlSeconds ?? 3;
  }

  /** Every lease this node was granted (a registration under one of them is this node's own). */
  readonly #leaseIds = new Set<string>();
  /** The lease this node id's registration was under at the last view (undefined: none). */
  #registrationLease: string | undefined;
  /** The warning that another lease holds this node id was given (once until that changes). */
  #unregisteredWarned = false;
  /**
   * The cluster configuration was found (or written) agreeing with this node since it last
   * registered. A lost lease clears it: etcd may have lost everything meanwhile (restored empty,
   * or wiped), and the configuration must then be written again before any bucket is claimed, or
   * a node of another bucket count could create it and place groups differently.
   */
  #configAgreed = false;
  /** The last configuration refusal warned of (once until it changes). */
  #configRefusal: string | undefined;
  /** As of the last view: another node holds this node's broker id (#brokerIdHolder's message). */
  #brokerIdRefusal: string | undefined;
  /** The broker id refusal warned of (once until it changes). */
  #brokerIdWarned: string | undefined;

  /**
   * Writes this node's registration, attached to `lease`, if the key is absent or under a lease of
   * this node's (the current one, or one it lost); false if another lease holds it: another process
   * under this node id, or this id's process before a restart, until etcd expires its lease.
   */
  async #putRegistration(lease: NodeLease): Promise<boolean> {
    return (
      (await lease.unlessGone("this node's registration", () => this.#writeRegistration(lease))) ??
      false
    );
  }

  async #writeRegistration(lease: NodeLease): Promise<boolean> {
    const key = Buffer.from(this.#keys.node(this.nodeId));
    const put = {
      request_put: { key, value: Buffer.from(JSON.stringify(this.#options.node)), lease: lease.id },
    };
    const what = `registering node ${this.nodeId}`;
    const created = await this.#connection.txn(
      {
        compare: [{ key, target: 'Create', result: 'Equal', create_revision: '0' }],
        success: [put],
        failure: [{ request_range: { key } }],
      },
      what,
    );
    if (created.succeeded) return true;
    const holder = created.responses[0]?.response_range?.kvs[0]?.lease;
    // (No holder: the key went meanwhile; the next attempt creates it.)
    if (holder === undefined || !this.#leaseIds.has(String(holder))) return false;
    const taken = await this.#connection.txn(
      {
        compare: [{ key, target: 'Lease', result: 'Equal', lease: String(holder) }],
        success: [put],
      },
      what,
    );
    return taken.succeeded;
  }

  /**
   * Another node registered this node's broker id first (it started while this node's lease was
   * lost): Kafka clients would take the two for one broker. This node gives up every bucket,
   * deletes its registration (if it is under its lease) so that the others take its share, and
   * registers no more until that registration goes; warned once per holder.
   */
  async #standAside(refusal: string): Promise<void> {
    if (this.#brokerIdWarned !== refusal)
      this.#warn(
        `${refusal}; this node stays out of the cluster (it serves no offsets-bucket) until that registration goes`,
      );
    this.#brokerIdWarned = refusal;
    for (const [bucket, owned] of [...this.#owned]) await this.#giveUp(bucket, owned);
    const lease = this.#registrationLease;
    if (lease !== undefined && this.#leaseIds.has(lease)) {
      const key = Buffer.from(this.#keys.node(this.nodeId));
      await this.#connection.txn(
        {
          compare: [{ key, target: 'Lease', result: 'Equal', lease }],
          success: [{ request_delete_range: { key } }],
        },
        `unregistering node ${this.nodeId}`,
      );
    }
  }

  /** The lease is gone: every bucket stops now; the next reconcile registers again. */
  #onLeaseLost(reason: string): void {
    this.#configAgreed = false;
    this.#warn(
      `node ${this.nodeId} lost its lease (${reason}): it stops serving its ${this.#owned.size} bucket(s)`,
    );
    for (const [bucket, owned] of this.#owned) {
      owned.log.abandon(
        new OffsetStoreError(
          'NOT_COORDINATOR',
          `node ${this.nodeId} lost its lease: it no longer owns offsets-bucket ${bucket}`,
        ),
      );
      this.#owned.delete(bucket);
      this.#options.store
        .unhostBucket(bucket)
        .catch((error: unknown) =>
          this.#warn(`unhosting offsets-bucket ${bucket}: ${(error as Error).message}`),
        );
    }
  }

  #arm(): void {
    if (this.#closed) return;
    this.#timer = setTimeout(() => {
      this.reconcile()
        .catch((error: unknown) => this.#warn(`reconciling: ${(error as Error).message}`))
        .finally(() => this.#arm());
    }, this.#options.reconcileIntervalMs ?? 250);
  }

  /** One reconcile pass (see the module comment); runs one at a time. */
  reconcile(): Promise<void> {
    this.#reconciling ??= this.#reconcile().finally(() => {
      this.#reconciling = undefined;
    });
    return this.#reconciling;
  }

  async #reconcile(): Promise<void> {
    if (this.#closed) return;
    if (this.#lease === undefined || this.#lease.lost) {
      // Registering again: not under a broker id another node took meanwhile.
      await this.#readView();
      if (this.#brokerIdRefusal === undefined) await this.#register();
    }
    await this.#readView();
    if (this.#brokerIdRefusal !== undefined) {
      await this.#standAside(this.#brokerIdRefusal);
      return;
    }
    this.#brokerIdWarned = undefined;
    // Registered: this node id's key is under the current lease. Else (missing: a registration
    // whose answer was lost; under a lease this node lost; under another process's lease) write it.
    let registered = this.#registrationLease === this.#lease?.id;
    if (!registered && this.#lease?.valid() === true) {
      registered = await this.#putRegistration(this.#lease);
      if (registered) await this.#readView();
    }
    const live = this.#nodes.map((n) => n.nodeId);
    for (const [bucket, owned] of [...this.#owned]) {
      const key = this.#owners.get(bucket);
      if (
        rendezvousOwner(bucket, live) !== this.nodeId ||
        owned.log.failed ||
        key === undefined ||
        !key.value.equals(owned.token.value)
      )
        await this.#giveUp(bucket, owned);
    }
    if (!registered) {
      // (A lease lost meanwhile was warned of: the next pass registers under a new one.)
      if (!this.#unregisteredWarned && this.#lease?.valid() === true)
        this.#warn(
          `node id ${this.nodeId} is registered under another lease (another process under this id, or this node's lease from before it was lost, until etcd expires it): it claims and releases no bucket meanwhile`,
        );
      this.#unregisteredWarned = true;
      return;
    }
    this.#unregisteredWarned = false;
    if (!this.#configAgreed) {
      try {
        await this.#checkConfig();
        this.#configAgreed = true;
        this.#configRefusal = undefined;
      } catch (error) {
        if (!isOffsetStoreError(error, 'INVALID_CONFIG')) throw error;
        if (this.#configRefusal !== error.message)
          this.#warn(`${error.message}: this node claims no offsets-bucket`);
        this.#configRefusal = error.message;
        return;
      }
    }
    for (const [bucket, token] of [...this.#owners]) {
      if (token.nodeId !== this.nodeId || this.#owned.has(bucket)) continue;
      try {
        if (await releaseBucket(this.#connection, this.#keys.bucket(bucket), token))
          this.#owners.delete(bucket);
      } catch (error) {
        this.#warn(`releasing offsets-bucket ${bucket}: ${(error as Error).message}`);
      }
    }
    if (this.#lease?.valid() !== true) return;
    for (let bucket = 0; bucket < this.#options.store.bucketCount && !this.#closed; bucket++) {
      if (
        this.#owned.has(bucket) ||
        this.#owners.has(bucket) ||
        rendezvousOwner(bucket, live) !== this.nodeId
      )
        continue;
      const damaged = this.#damaged.get(bucket);
      if (damaged !== undefined && performance.now() < damaged.retryAtMs) continue;
      try {
        await this.#take(bucket);
        this.#damaged.delete(bucket);
      } catch (error) {
        if (this.#closed) continue;
        if (isOffsetStoreError(error, 'CORRUPT_MESSAGE')) {
          // Damage does not go away by itself: try again later, less and less often, rather than
          // claim the bucket and read its whole log again at every reconcile.
          const delayMs = Math.min(
            DAMAGED_RETRY_MS_MAX,
            damaged === undefined ? DAMAGED_RETRY_MS_MIN : damaged.delayMs * 2,
          );
          this.#damaged.set(bucket, { delayMs, retryAtMs: performance.now() + delayMs });
          this.#warn(
            `taking offsets-bucket ${bucket}: ${(error as Error).message} (tried again in ${Math.round(delayMs / 1000)} s)`,
          );
        } else this.#warn(`taking offsets-bucket ${bucket}: ${(error as Error).message}`);
      }
    }
    for (const [bucket, owned] of this.#owned) {
      if (
        owned.log.nextOffset - owned.checkpointLogOffset <
        (this.#options.checkpointBatches ?? 10_000)
      )
        continue;
      try {
        await this.#checkpoint(owned);
      } catch (error) {
        this.#warn(`checkpointing offsets-bucket ${bucket}: ${(error as Error).message}`);
      }
    }
  }

  async #readView(): Promise<void> {
    const nodes = await this.#connection.range(
      { key: Buffer.from(this.#keys.nodes), range_end: prefixEnd(this.#keys.nodes) },
      'listing nodes',
    );
    this.#nodes = readableNodes(nodes.kvs, (key, value) => {
      // Once per value: the view is read every reconcile.
      const seen = `${key}\0${value}`;
      if (this.#unreadable.has(seen)) return;
      this.#unreadable.add(seen);
      this.#warn(
        `the registration ${key} cannot be read (${JSON.stringify(value.slice(0, 200))}): it is left out of the cluster's nodes until it is rewritten or deleted`,
      );
    });
    const mine = Buffer.from(this.#keys.node(this.nodeId));
    const registration = nodes.kvs.find((kv) => kv.key.equals(mine));
    this.#registrationLease = registration === undefined ? undefined : String(registration.lease);
    this.#brokerIdRefusal = this.#brokerIdHolder(nodes.kvs);
    const owners = await this.#connection.range(
      { key: Buffer.from(this.#keys.owners), range_end: prefixEnd(this.#keys.owners) },
      'listing owners',
    );
    const view = new Map<number, OwnerToken>();
    for (const kv of owners.kvs) {
      const token = parseOwnerToken(kv.value);
      if (token !== undefined) view.set(this.#keys.bucketOfOwnerKey(kv.key), token);
    }
    this.#owners = view;
  }

  /** Claims, recovers and hosts `bucket`; if anything fails after the claim, releases it again. */
  async #take(bucket: number): Promise<void> {
    const keys = this.#keys.bucket(bucket);
    // The lease the claim is made under: the bucket is served only if it is still this node's
    // lease, never lost, once the bucket is hosted (a later lease does not own the claim).
    const lease = this.#lease!;
    const token = await lease.unlessGone(`a claim of offsets-bucket ${bucket}`, () =>
      claimBucket(this.#connection, keys, this.nodeId, lease.id),
    );
    if (token === undefined) return;
    try {
      const startedMs = performance.now();
      const checkpoint = await readEtcdCheckpoint(this.#connection, keys);
      const state = checkpoint?.state ?? new OffsetsTableState();
      const fromLogOffset = checkpoint?.pointer.logOffset ?? 0;
      let replayed = 0;
      let recordsReplayed = 0;
      const log = await EtcdLog.open(
        { connection: this.#connection, keys, owner: token },
        {
          fromLogOffset,
          visit: (buf, position, logOffset) => {
            state.applyBatch(buf, position, logOffset);
            replayed++;
            recordsReplayed += readBatchRecordCount(buf, position);
          },
        },
      );
      const table = OffsetsTable.over(log, state);
      const report: OffsetsTableRecovery = {
        segmentCount: 0,
        batchCount: replayed,
        batchesReplayed: replayed,
        recordsReplayed,
        bytesTruncated: 0,
        firstLogOffset: log.firstOffset,
        logEndOffset: log.nextOffset,
        checkpointLogOffset: checkpoint?.pointer.logOffset,
        recoveryMs: performance.now() - startedMs,
      };
      if (this.#closed || this.#lease !== lease || !lease.valid()) {
        await log.close();
        throw new OffsetStoreError(
          'NOT_COORDINATOR',
          `node ${this.nodeId} stopped or lost its lease while recovering offsets-bucket ${bucket}`,
        );
      }
      await this.#options.store.hostBucket(bucket, table, report);
      // #onLeaseLost stops only owned buckets: one lost while this bucket was being hosted was not
      // among them, and the next lease would make the serving guard true again.
      if (this.#closed || this.#lease !== lease || lease.lost) {
        const lost = new OffsetStoreError(
          'NOT_COORDINATOR',
          `node ${this.nodeId} stopped or lost its lease while hosting offsets-bucket ${bucket}`,
        );
        log.abandon(lost);
        await this.#options.store
          .unhostBucket(bucket)
          .catch((error: unknown) =>
            this.#warn(`unhosting offsets-bucket ${bucket}: ${(error as Error).message}`),
          );
        throw lost;
      }
      this.#owned.set(bucket, { bucket, token, log, table, checkpointLogOffset: fromLogOffset });
    } catch (error) {
      await releaseBucket(this.#connection, keys, token).catch(() => {});
      throw error;
    }
  }

  /** Stops serving `bucket` (requests get NOT_COORDINATOR at once), lets its log settle, and releases it. */
  async #giveUp(bucket: number, owned: OwnedBucket, drain = false): Promise<void> {
    this.#owned.delete(bucket);
    // Appends not sent yet go to the next owner (retriable); only the round in flight is waited for
    // (unless the node closes: then it answers what it has taken).
    if (!drain)
      owned.log.refuseAppends(
        new OffsetStoreError(
          'NOT_COORDINATOR',
          `node ${this.nodeId} is giving offsets-bucket ${bucket} up: find the coordinator again`,
        ),
      );
    try {
      await this.#options.store.unhostBucket(bucket);
    } catch (error) {
      this.#warn(`unhosting offsets-bucket ${bucket}: ${(error as Error).message}`);
    }
    if (this.#closeAbandoned) return;
    try {
      // Released: until the next reconcile reads the owners again, the bucket is between owners
      // here too, not still this node's (FindCoordinator would name this node for it).
      if (await releaseBucket(this.#connection, this.#keys.bucket(bucket), owned.token))
        if (this.#owners.get(bucket)?.value.equals(owned.token.value) === true)
          this.#owners.delete(bucket);
    } catch (error) {
      this.#warn(`releasing offsets-bucket ${bucket}: ${(error as Error).message}`);
    }
  }

  /**
   * Checkpoints the state as applied now (every batch below its applied log offset + 1 is
   * acknowledged and in it), without waiting for the appends in flight: they land above it and are
   * replayed from the log. (Waiting for the log to be idle never ended while commits kept coming,
   * and held up the whole reconcile.)
   */
  async #checkpoint(owned: OwnedBucket): Promise<void> {
    const pointer = await writeEtcdCheckpoint(
      this.#connection,
      this.#keys.bucket(owned.bucket),
      owned.token,
      owned.table.state,
      Date.now(),
    );
    owned.checkpointLogOffset = pointer.logOffset;
    await owned.log.truncateBelow(pointer.logOffset);
  }

  /** The cluster's nodes and buckets, read from etcd. */
  async status(): Promise<ClusterStatus> {
    return clusterStatus(this.#connection, this.#keys);
  }

  /** Buckets whose data failed to load as damaged, and when to try again. */
  readonly #damaged = new Map<number, { delayMs: number; retryAtMs: number }>();

  /** Registrations warned of as unreadable (key and value). */
  readonly #unreadable = new Set<string>();

  #warn(message: string): void {
    // Through the store's rule: an onWarning that throws must not reject the reconcile loop's
    // promise chain (an unhandled rejection ends the process).
    this.#onWarning(message);
  }

  readonly #onWarning: (message: string) => void;

  /**
   * Leaves the cluster: stops reconciling, gives every bucket up at once (its log answers what it
   * has queued), deregisters (revoking the lease deletes the registration) and closes the
   * connection. The store stays open. Bounded by the lease: once it is lost or no longer confirmed
   * (etcd does not answer), etcd deletes the ownership keys with it, so nothing is waited for any
   * more: the buckets still settling are abandoned (their commits get NOT_COORDINATOR). Closing
   * thus takes at most about the lease TTL plus a call deadline.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#timer);
    const lease = leaseRunsOut(this.#lease);
    try {
      await Promise.race([this.#reconciling?.catch(() => {}), lease.ranOut]);
      // Closing drains what each log has queued: commits already taken are answered, not refused.
      const settling = new Map(this.#owned);
      await Promise.race([
        Promise.all(
          [...settling].map(async ([bucket, owned]) => {
            await this.#giveUp(bucket, owned, true);
            settling.delete(bucket);
          }),
        ),
        lease.ranOut,
      ]);
      if (settling.size > 0) this.#closeAbandoned = true;
      for (const [bucket, owned] of settling)
        owned.log.abandon(
          new OffsetStoreError(
            'NOT_COORDINATOR',
            `node ${this.nodeId} closed without a confirmed lease: it no longer owns offsets-bucket ${bucket}`,
          ),
        );
    } finally {
      lease.stop();
    }
    await this.#lease?.stop(true);
    this.#connection.close();
  }

  /** close() stopped waiting for buckets to settle (the lease ran out): they release nothing. */
  #closeAbandoned = false;

  /** Stops as a crash would: no release, no revoke; the lease expires in etcd on its own (for tests). */
  abandon(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    void this.#lease?.stop(false);
    for (const owned of this.#owned.values())
      owned.log.abandon(new OffsetStoreError('NOT_COORDINATOR', `node ${this.nodeId} stopped`));
    this.#owned.clear();
    this.#connection.close();
  }
}

/**
 * TypeError or RangeError, naming the option, for a node option that cannot work: an empty node id
 * (it never owns a bucket), an interval or deadline below 1 ms (a reconcile interval of 0 spins), a
 * lease TTL etcd would not keep.
 */
export function checkNodeOptions(options: {
  node?: { nodeId?: unknown };
  nodeId?: unknown;
  leaseTtlSeconds?: unknown;
  reconcileIntervalMs?: unknown;
  callTimeoutMs?: unknown;
  checkpointBatches?: unknown;
}): void {
  const nodeId = options.node === undefined ? options.nodeId : options.node.nodeId;
  const name = options.node === undefined ? 'nodeId' : 'node.nodeId';
  if (typeof nodeId !== 'string')
    throw new TypeError(`${name} must be a string, got ${typeof nodeId}`);
  if (nodeId.length === 0) throw new RangeError(`${name} must not be empty`);
  if (options.leaseTtlSeconds !== undefined)
    checkLeaseTtl(options.leaseTtlSeconds, 'leaseTtlSeconds');
  for (const option of ['reconcileIntervalMs', 'callTimeoutMs', 'checkpointBatches'] as const) {
    const value = options[option];
    if (value === undefined) continue;
    if (typeof value !== 'number')
      throw new TypeError(`${option} must be a number, got ${typeof value}`);
    if (!Number.isSafeInteger(value) || value < 1 || value > 0x7fffffff)
      throw new RangeError(`${option} must be an integer in [1, ${0x7fffffff}], got ${value}`);
  }
}

/**
 * `ranOut` resolves once `lease` is lost or no longer confirmed (at once without a lease): from then
 * on etcd may delete the node's keys at any moment. `stop` ends the watch.
 */
function leaseRunsOut(lease: NodeLease | undefined): { ranOut: Promise<void>; stop: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const ranOut = new Promise<void>((resolve) => {
    const check = () => {
      if (lease === undefined || !lease.valid()) resolve();
      else timer = setTimeout(check, 50);
    };
    check();
  });
  return { ranOut, stop: () => clearTimeout(timer) };
}

/** The bucket count of the cluster configuration `text` (at `key`); CORRUPT_MESSAGE naming the key if it has none. */
export function configuredBucketCount(key: string, text: string): number {
  let bucketCount: unknown;
  try {
    bucketCount = (JSON.parse(text) as { bucketCount?: unknown } | null)?.bucketCount;
  } catch {
    bucketCount = undefined;
  }
  if (!Number.isSafeInteger(bucketCount) || (bucketCount as number) < 1)
    throw new OffsetStoreError(
      'CORRUPT_MESSAGE',
      `the cluster configuration ${key} cannot be read (${JSON.stringify(text.slice(0, 200))}): it must hold {"bucketCount": <n>}`,
    );
  return bucketCount as number;
}

/**
 * The registrations of `kvs` that are well-formed NodeInfo, sorted by node id; `onUnreadable` hears
 * of each other one. Skipped, not thrown: one damaged value (written by hand, or by another version)
 * stopped every node's reconciling, so that no bucket moved any more.
 */
function readableNodes(
  kvs: readonly { key: Buffer; value: Buffer }[],
  onUnreadable: (key: string, value: string) => void,
): NodeInfo[] {
  const nodes: NodeInfo[] = [];
  for (const kv of kvs) {
    const node = parseNodeInfo(kv.value.toString());
    if (node === undefined) onUnreadable(kv.key.toString(), kv.value.toString());
    else nodes.push(node);
  }
  return nodes.sort((a, b) => (a.nodeId < b.nodeId ? -1 : 1));
}

/** Whether `address` is one a node can register: a host name and a port number. */
function isAddress(address: {
  host?: unknown;
  port?: unknown;
}): address is { host: string; port: number } {
  const { host, port } = address;
  return (
    typeof host === 'string' &&
    Number.isInteger(port) &&
    (port as number) >= 0 &&
    (port as number) <= 65_535
  );
}

function parseNodeInfo(text: string): NodeInfo | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const { nodeId, brokerId, host, port, listeners } = (parsed ?? {}) as Partial<
    Record<keyof NodeInfo, unknown>
  >;
  const address = { host, port };
  if (
    typeof nodeId !== 'string' ||
    nodeId.length === 0 ||
    !Number.isSafeInteger(brokerId) ||
    !isAddress(address)
  )
    return undefined;
  const info: NodeInfo = { nodeId, brokerId: brokerId as number, ...address };
  if (listeners !== null && typeof listeners === 'object' && !Array.isArray(listeners)) {
    const byName: Record<string, { host: string; port: number }> = {};
    for (const [name, each] of Object.entries(listeners as Record<string, unknown>)) {
      const { host: onHost, port: onPort } = (each ?? {}) as { host?: unknown; port?: unknown };
      const on = { host: onHost, port: onPort };
      if (isAddress(on)) byName[name] = on;
    }
    info.listeners = byName;
  }
  return info;
}

/** The cluster's live nodes and every bucket's owner, placement, log end, checkpoint and log length, read from etcd. */
export async function clusterStatus(
  connection: EtcdConnection,
  keys: ClusterKeys,
): Promise<ClusterStatus> {
  await loadChecksum(); // rendezvous hashing uses xxh32
  const config = await connection.range(
    { key: Buffer.from(keys.config) },
    'reading the cluster configuration',
  );
  const bucketCount =
    config.kvs[0] === undefined
      ? 0
      : configuredBucketCount(keys.config, config.kvs[0].value.toString());
  const listed = await connection.range(
    { key: Buffer.from(keys.nodes), range_end: prefixEnd(keys.nodes) },
    'listing nodes',
  );
  const nodes = readableNodes(listed.kvs, () => {});
  const catalog = (await readClusterTopics(connection, keys)).content;
  const live = nodes.map((n) => n.nodeId);
  const buckets: BucketStatus[] = [];
  for (let bucket = 0; bucket < bucketCount; bucket++) {
    const b = keys.bucket(bucket);
    const res = await connection.txn(
      {
        success: [
          { request_range: { key: Buffer.from(b.owner) } },
          { request_range: { key: Buffer.from(b.next) } },
          { request_range: { key: Buffer.from(b.checkpoint) } },
          {
            request_range: {
              key: Buffer.from(b.log),
              range_end: prefixEnd(b.log),
              count_only: true,
            },
          },
        ],
      },
      `reading offsets-bucket ${bucket}`,
    );
    const [owner, next, checkpoint] = res.responses.slice(0, 3).map((r) => r.response_range.kvs[0]);
    const token = owner === undefined ? undefined : parseOwnerToken(owner.value);
    buckets.push({
      bucket,
      owner: token === undefined ? undefined : { nodeId: token.nodeId, epoch: token.epoch },
      assignedTo: rendezvousOwner(bucket, live),
      nextLogOffset: nextLogOffsetOf(b, next),
      checkpointLogOffset:
        checkpoint === undefined ? 0 : checkpointPointerOf(b, checkpoint.value).logOffset,
      logBatches: Number(res.responses[3]!.response_range.count),
    });
  }
  return {
    bucketCount,
    clusterId: catalog?.clusterId,
    topics: (catalog?.topics ?? []).map(({ name, tableId, partitions, topicId }) => ({
      name,
      tableId,
      partitions,
      topicId,
    })),
    nodes,
    buckets,
  };
}
