/**
 * The cluster's topic catalog: one catalog in etcd (`<prefix>topics`) that every node's own catalog
 * file copies, so that a topic names the same table, by the same topic id, on every node, and the
 * nodes report one cluster id. A Kafka client reads Metadata from any node and talks to its group's
 * coordinator on another: a KIP-848 assignment names topics by id, and a commit acknowledged under a
 * name must read back under that name once its bucket has moved.
 *
 * The value is the catalog file's own format (catalog-file.ts: `{ formatVersion, clusterId,
 * topics[], checksum }`), checked the same way when read (CORRUPT_MESSAGE naming the key).
 *
 * A node joining (`joinClusterTopics`, before its Kafka server starts) merges into it, in one
 * compare-and-swap on the key's modification revision (read again and merged afresh when another
 * node wrote meanwhile):
 * - the topics of its own catalog file, if it has one: a topic the cluster has under the same name
 *   and table keeps the cluster's topic id and the larger partition count; one the cluster lacks
 *   joins it with its table and id, unless another topic of the cluster holds that table (or a name
 *   colliding with it); a topic the cluster has under another table is refused (INVALID_CONFIG:
 *   the two would show different offsets under one name), naming the node's file to remove (a
 *   node's directory holds no offsets, only its lock, manifest and this copy);
 * - the topics it is told to serve (`--topic`): created with a table above every table the cluster
 *   and the file name, or grown; asking for fewer partitions than the cluster has is refused, as a
 *   single server refuses to shrink a topic;
 * - the cluster id: the cluster's, or the node's own for a cluster without a catalog yet.
 * The result (every topic of the cluster, the node's and the others') is what the node then writes
 * as its own catalog file and serves. Nothing is written to etcd when it adds nothing.
 *
 * A running node takes what other nodes add later (topics, partitions) at its next look at the key
 * (`ClusterTopicsWatch`), through its catalog's `adopt`. Topics a client's request creates on a node
 * that allows it (autoCreateTopics) are merged the same way, before the client hears of them: the
 * node's catalog follows the cluster's (`TopicCatalog.follow`), a round of creations being a join
 * with no catalog of its own that leaves out what it cannot take (`skipRefused`) rather than fail
 * the round.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { OffsetStoreError } from '../errors/index.js';
import {
  collisionKey,
  decodeCatalog,
  encodeCatalog,
  partitionCountProblem,
  topicNameProblem,
  type CatalogContent,
  type TopicEntry,
} from '../kafka/index.js';
import type { EtcdConnection } from './etcd-connection.js';
import type { ClusterKeys } from './cluster-keys.js';

/** Compare-and-swap attempts before a join gives up (each lost to another node's write). */
const JOIN_ATTEMPTS = 20;

/** A topic a node is told to serve. */
export interface WantedTopic {
  readonly name: string;
  readonly partitions: number;
  /** False: create it unless it exists (a client's request); default: make it exist with exactly `partitions`. */
  readonly grow?: boolean;
}

/** What `joinClusterTopics` needs. */
export interface JoinClusterTopicsOptions {
  readonly connection: EtcdConnection;
  readonly keys: ClusterKeys;
  /** The node's own catalog (its file), if it has one, and the file's path for messages. */
  readonly local: { readonly content: CatalogContent; readonly path: string } | undefined;
  /** The topics the node is told to serve. */
  readonly wanted: readonly WantedTopic[];
  /** Most topics a catalog holds. */
  readonly topicsMax: number;
  /** The clock, ms since the epoch (stamps new topics). */
  readonly nowMs: () => number;
  /**
   * Leave out a wanted topic that cannot be created or grown (a bad or colliding name, a shrink, the
   * limit) rather than refuse them all: a node's catalog asking for a round of clients' changes
   * tells each why from the catalog it gets back.
   */
  readonly skipRefused?: boolean;
}

/** The cluster's catalog as read from etcd: its content and the key's modification revision ('0': absent). */
export interface ClusterTopicsRead {
  readonly content: CatalogContent | undefined;
  readonly modRevision: string;
}

/** Reads the cluster's catalog. */
export async function readClusterTopics(
  connection: EtcdConnection,
  keys: ClusterKeys,
): Promise<ClusterTopicsRead> {
  const res = await connection.range(
    { key: Buffer.from(keys.topics) },
    'reading the cluster topic catalog',
  );
  const kv = res.kvs[0];
  if (kv === undefined) return { content: undefined, modRevision: '0' };
  return { content: decodeCatalog(keys.topics, kv.value), modRevision: String(kv.mod_revision) };
}

/** Merges the node's topics into the cluster's catalog (see the module comment); resolves with the cluster's catalog as it is now. */
export async function joinClusterTopics(
  options: JoinClusterTopicsOptions,
): Promise<CatalogContent> {
  const { connection, keys } = options;
  for (let attempt = 0; attempt < JOIN_ATTEMPTS; attempt++) {
    const read = await readClusterTopics(connection, keys);
    const merged = mergeNodeTopics(read.content, options);
    if (read.content !== undefined && sameContent(read.content, merged)) return merged;
    const key = Buffer.from(keys.topics);
    const res = await connection.txn(
      {
        compare: [
          read.modRevision === '0'
            ? { key, target: 'Create', result: 'Equal', create_revision: 0 }
            : { key, target: 'Mod', result: 'Equal', mod_revision: read.modRevision },
        ],
        success: [{ request_put: { key, value: encodeCatalog(merged) } }],
        failure: [],
      },
      'writing the cluster topic catalog',
    );
    if (res.succeeded) return merged;
  }
  throw new OffsetStoreError(
    'COORDINATOR_NOT_AVAILABLE',
    `${keys.topics}: ${JOIN_ATTEMPTS} attempts to add this node's topics lost to other nodes' writes`,
  );
}

/** The cluster's catalog with the node's topics merged in; INVALID_CONFIG / INVALID_REQUEST when they contradict it. */
export function mergeNodeTopics(
  cluster: CatalogContent | undefined,
  options: Pick<
    JoinClusterTopicsOptions,
    'local' | 'wanted' | 'topicsMax' | 'nowMs' | 'keys' | 'skipRefused'
  >,
): CatalogContent {
  const { local, keys } = options;
  const byName = new Map<string, TopicEntry>();
  const byTable = new Map<number, TopicEntry>();
  const byCollision = new Map<string, TopicEntry>();
  const topicIds = new Set<string>();
  const put = (topic: TopicEntry): void => {
    byName.set(topic.name, topic);
    byTable.set(topic.tableId, topic);
    byCollision.set(collisionKey(topic.name), topic);
    topicIds.add(topic.topicId);
  };
  for (const topic of cluster?.topics ?? []) put(topic);
  const checkRoom = (name: string): void => {
    if (byName.size >= options.topicsMax)
      throw new OffsetStoreError(
        'INVALID_REQUEST',
        `the cluster's catalog ${keys.topics} holds ${byName.size} topics, this node's limit (topicsMax); ${name} was not added`,
      );
  };
  for (const mine of local?.content.topics ?? []) {
    const theirs = byName.get(mine.name);
    const removeFile = `remove ${local!.path} (a node's directory holds no offsets) to take the cluster's topics`;
    if (theirs !== undefined) {
      if (theirs.tableId !== mine.tableId)
        throw new OffsetStoreError(
          'INVALID_CONFIG',
          `topic ${mine.name} is table ${mine.tableId} in this node's catalog ${local!.path} but table ${theirs.tableId} in the cluster's (${keys.topics}): the two would show different offsets under one name; ${removeFile}`,
        );
      if (mine.partitions > theirs.partitions) put({ ...theirs, partitions: mine.partitions });
      continue;
    }
    const holder = byTable.get(mine.tableId) ?? byCollision.get(collisionKey(mine.name));
    if (holder !== undefined)
      throw new OffsetStoreError(
        'INVALID_CONFIG',
        `topic ${mine.name} of this node's catalog ${local!.path} is table ${mine.tableId}, but the cluster's (${keys.topics}) has ${holder.name} as table ${holder.tableId}: ${removeFile}`,
      );
    checkRoom(mine.name);
    put(topicIds.has(mine.topicId) ? { ...mine, topicId: freshTopicId(topicIds) } : mine);
  }
  let nextTableId = 1;
  for (const t of byTable.keys()) nextTableId = Math.max(nextTableId, t + 1);
  for (const t of local?.content.topics ?? []) nextTableId = Math.max(nextTableId, t.tableId + 1);
  for (const { name, partitions, grow } of options.wanted) {
    try {
      const countProblem = partitionCountProblem(name, partitions);
      if (countProblem !== null) throw new OffsetStoreError('INVALID_CONFIG', countProblem);
      const existing = byName.get(name);
      if (existing !== undefined) {
        if (grow === false) continue;
        if (partitions < existing.partitions)
          throw new OffsetStoreError(
            'INVALID_CONFIG',
            `topic ${name} has ${existing.partitions} partitions in the cluster's catalog (${keys.topics}); partition counts never shrink (asked for ${partitions})`,
          );
        if (partitions > existing.partitions) put({ ...existing, partitions });
        continue;
      }
      const problem =
        topicNameProblem(name) ??
        (byCollision.has(collisionKey(name))
          ? `topic name ${JSON.stringify(name)} collides with the cluster's topic ${byCollision.get(collisionKey(name))!.name} ('.' and '_' are alike)`
          : null);
      if (problem !== null) throw new OffsetStoreError('INVALID_CONFIG', problem);
      checkRoom(name);
    } catch (error) {
      if (options.skipRefused === true) continue;
      throw error;
    }
    put({
      name,
      topicId: freshTopicId(topicIds),
      tableId: nextTableId++,
      partitions,
      createdAtMs: options.nowMs(),
    });
  }
  const topics = [...byName.values()].sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  );
  return {
    clusterId:
      cluster?.clusterId ?? local?.content.clusterId ?? randomBytes(16).toString('base64url'),
    topics,
  };
}

/** Whether two catalogs hold the same cluster id and topics. */
export function sameContent(a: CatalogContent, b: CatalogContent): boolean {
  return encodeCatalog(a).equals(encodeCatalog(b));
}

function freshTopicId(taken: ReadonlySet<string>): string {
  for (;;) {
    const id = randomUUID();
    if (!taken.has(id)) return id;
  }
}

/** What a watch needs of the node's catalog. */
export interface AdoptingCatalog {
  readonly clusterId: string;
  readonly filePath: string;
  topics(): readonly TopicEntry[];
  adopt(authority: CatalogContent): Promise<readonly Error[]>;
}

/**
 * Looks at the cluster's catalog every `intervalMs` and has the node's catalog adopt it whenever the
 * key changed: topics and partitions other nodes added reach this node's clients without a restart.
 * A key found missing (etcd restored empty or wiped) is written again from the node's catalog, as
 * a join with no topics of its own would, so the cluster's topics survive that too. A look that
 * fails (etcd unreachable, a value that does not decode) or a topic the node's catalog refuses is
 * warned of, once per message; the next change of the key is looked at again.
 */
export class ClusterTopicsWatch {
  readonly #connection: EtcdConnection;
  readonly #keys: ClusterKeys;
  readonly #catalog: AdoptingCatalog;
  readonly #intervalMs: number;
  readonly #onWarning: (message: string) => void;
  readonly #warned = new Set<string>();
  #adoptedRevision: string;
  #timer: NodeJS.Timeout | undefined;
  #looking: Promise<void> | undefined;
  #closed = false;

  constructor(options: {
    connection: EtcdConnection;
    keys: ClusterKeys;
    catalog: AdoptingCatalog;
    intervalMs: number;
    onWarning: (message: string) => void;
  }) {
    this.#connection = options.connection;
    this.#keys = options.keys;
    this.#catalog = options.catalog;
    this.#intervalMs = options.intervalMs;
    this.#onWarning = options.onWarning;
    this.#adoptedRevision = '';
  }

  /** Starts looking. */
  start(): void {
    this.#arm();
  }

  /** One look now (tests; the timer's looks go through it too); one at a time. */
  look(): Promise<void> {
    this.#looking ??= this.#look().finally(() => {
      this.#looking = undefined;
    });
    return this.#looking;
  }

  /** Stops looking; resolves once a look under way has ended. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    await this.#looking;
  }

  async #look(): Promise<void> {
    if (this.#closed) return;
    let read: ClusterTopicsRead;
    try {
      read = await readClusterTopics(this.#connection, this.#keys);
    } catch (error) {
      this.#warn(`reading the cluster's topics: ${(error as Error).message}`);
      return;
    }
    if (read.modRevision === this.#adoptedRevision || this.#closed) return;
    if (read.content === undefined) {
      try {
        await joinClusterTopics({
          connection: this.#connection,
          keys: this.#keys,
          local: {
            content: { clusterId: this.#catalog.clusterId, topics: this.#catalog.topics() },
            path: this.#catalog.filePath,
          },
          wanted: [],
          topicsMax: Number.MAX_SAFE_INTEGER,
          nowMs: () => Date.now(),
        });
      } catch (error) {
        this.#warn(`writing the cluster's topics again: ${(error as Error).message}`);
      }
      return;
    }
    const refused = await this.#catalog.adopt(read.content);
    for (const refusal of refused) this.#warn(refusal.message);
    this.#adoptedRevision = read.modRevision;
  }

  #warn(message: string): void {
    if (this.#warned.has(message)) return;
    this.#warned.add(message);
    try {
      this.#onWarning(message);
    } catch {
      // A hearer's failure is not the watch's.
    }
  }

  #arm(): void {
    if (this.#closed) return;
    this.#timer = setTimeout(() => {
      this.look()
        .catch((error: unknown) =>
          this.#warn(`adopting the cluster's topics: ${(error as Error).message}`),
        )
        .finally(() => this.#arm());
    }, this.#intervalMs);
    this.#timer.unref();
  }
}
