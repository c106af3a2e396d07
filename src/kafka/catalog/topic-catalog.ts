/**
 * The durable topic catalog: which Kafka topic is which table of the store. Topic = table; partition
 * p = bucket p of that table (no partition id). Each topic has a stable UUID (Metadata v10+ and
 * consumer-group assignments name topics by it) and a partition count that grows and never
 * shrinks. The catalog lives in `kafka-topics.json` in the store directory (catalog-file.ts has
 * the format), read and written through the store's file-system port.
 *
 * Invariants:
 * - a topic is visible (get, byTopicId, byTableId, topics) only once the file naming it is durable,
 *   so no client is ever told of a topic that a crash could take back;
 * - changes take effect in call order, group-committed: the changes asked for while a write is
 *   under way are applied together to a copy and the whole catalog is written once for all of
 *   them (temp file, fdatasync, rename, directory fsync), then installed, `onTopicChanged` told of
 *   each topic changed, and each change answered (one Metadata request naming thousands of unknown
 *   topics is one write, not one per topic, and holds other clients' changes up by that one write);
 *   a change refused (a bad name, a shrink, the topic limit) is refused alone;
 * - a failed write fail-stops the catalog: after it, every change is refused with
 *   LOG_STORAGE_ERROR until the server restarts (what reached the disk is unknown, and a later write
 *   that "succeeds" proves nothing); lookups go on serving what was installed;
 * - table ids are never reused: a new topic takes one more than the highest id in the catalog
 *   and than the highest table id the store holds offsets of (`highestTableIdInUse`, asked once,
 *   before the first topic is created), starting at 1: a catalog file lost or restored from an
 *   older copy must not give a new topic the table, and so the committed offsets, of an old one;
 * - `adopt` makes the catalog a copy of an authority's (a cluster's catalog in etcd) for the topics
 *   that one names, through the same rounds: its cluster id, and each topic's table, topic id and
 *   partition count (never fewer partitions than the catalog has); a topic it names under another
 *   table than the catalog does, or under a table another topic holds here, is refused and left as
 *   it is, with the rest adopted.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import * as path from 'node:path';
import { loadChecksum } from '../../codec/index.js';
import { OffsetStoreError, type ErrorCode } from '../../errors/index.js';
import type { FileSystem } from '../../io/index.js';
import { writeDurably } from '../../log/index.js';
import {
  CATALOG_FILE,
  decodeCatalog,
  encodeCatalog,
  partitionCountProblem,
  type CatalogContent,
  type TopicEntry,
} from './catalog-file.js';
import { collisionKey, topicNameProblem } from './topic-name.js';

/** Why the catalog refused a change. */
export type TopicRefusal =
  'invalid-name' | 'collision' | 'partitions' | 'topics-max' | 'shrink' | 'failed' | 'conflict';

/** A change the catalog refused; `refusal` says why, so a Kafka handler can pick the error code. */
export class TopicCatalogError extends OffsetStoreError {
  /** Why the change was refused. */
  readonly refusal: TopicRefusal;

  constructor(code: ErrorCode, refusal: TopicRefusal, message: string, cause?: unknown) {
    super(code, message, cause === undefined ? undefined : { cause });
    this.name = 'TopicCatalogError';
    this.refusal = refusal;
  }
}

/** Options of `TopicCatalog.open`. */
export interface TopicCatalogOptions {
  /** The store's file-system port. */
  readonly fs: FileSystem;
  /** The store directory (the catalog is `kafka-topics.json` in it). */
  readonly dir: string;
  /** Most topics the catalog holds. */
  readonly topicsMax: number;
  /** The clock's time, ms since the epoch (stamps `createdAtMs`). */
  readonly nowMs: () => number;
  /** Hears of every topic created or grown, once it is durable and visible. */
  readonly onTopicChanged?: (topic: TopicEntry) => void;
  /** The highest table id the store holds offsets of (0 when none): new topics take ids above it. */
  readonly highestTableIdInUse?: () => Promise<number>;
  /** Hears of tables the store holds offsets of that the catalog does not name. */
  readonly onWarning?: (message: string) => void;
  /**
   * Awaited before the catalog file is written: rejects (LOG_STORAGE_ERROR) once the store's
   * directory was renamed or replaced under the process, where the name leads to another store.
   */
  readonly checkDirectory?: () => Promise<void>;
}

/**
 * Where topics are created and grown, when a catalog is a copy of another (a cluster's, in etcd):
 * called with a round's creations and growths that passed the catalog's own checks; resolves with
 * that catalog as it is after taking them (leaving out those it refused), which the round adopts in
 * their place. A rejection fails the round's changes, and leaves the catalog as it was.
 */
export type TopicAuthority = (changes: readonly AuthorityChange[]) => Promise<CatalogContent>;

/** A creation (`grow` false: unless the topic exists) or growth asked of the authority. */
export interface AuthorityChange {
  readonly name: string;
  readonly partitions: number;
  readonly grow: boolean;
}

/** The topics a Kafka front end serves, and the store tables behind them. */
export class TopicCatalog {
  readonly #options: TopicCatalogOptions;
  readonly #filePath: string;
  #clusterId: string;
  #topics: readonly TopicEntry[];
  readonly #byName = new Map<string, TopicEntry>();
  readonly #byTopicId = new Map<string, TopicEntry>();
  readonly #byTableId = new Map<number, TopicEntry>();
  readonly #collisions = new Set<string>();
  /** The next table id a new topic takes. */
  #nextTableId = 1;
  /** Whether `highestTableIdInUse` was asked. */
  #inUseChecked = false;
  /** Changes asked for and not yet taken by a write. */
  #pending: PendingChange[] = [];
  /** Where creations and growths are made, once the catalog follows one (`follow`). */
  #authority: TopicAuthority | undefined;
  /** The loop writing rounds of changes, while there are any. */
  #writing: Promise<void> | undefined;
  #failure: unknown;

  /** Most topics the catalog holds. */
  get topicsMax(): number {
    return this.#options.topicsMax;
  }

  private constructor(options: TopicCatalogOptions, filePath: string, content: CatalogContent) {
    this.#options = options;
    this.#filePath = filePath;
    this.#clusterId = content.clusterId;
    this.#topics = content.topics;
    for (const topic of content.topics) this.#index(topic);
  }

  /**
   * Reads the catalog of the store in `options.dir`, or starts an empty one (written with the first
   * topic). CORRUPT_MESSAGE for a damaged file, INVALID_CONFIG for another format version.
   */
  static async open(options: TopicCatalogOptions): Promise<TopicCatalog> {
    await loadChecksum();
    const filePath = path.join(options.dir, CATALOG_FILE);
    let bytes: Buffer | null;
    try {
      bytes = await options.fs.readFile(filePath);
    } catch (error) {
      // Not a file (a directory, a FIFO), unreadable: the store's error, naming the file.
      throw new OffsetStoreError(
        'LOG_STORAGE_ERROR',
        `reading the topic catalog ${filePath} failed: ${(error as Error).message}`,
        { cause: error },
      );
    }
    const content =
      bytes === null
        ? { clusterId: randomBytes(16).toString('base64url'), topics: [] }
        : decodeCatalog(filePath, bytes);
    return new TopicCatalog(options, filePath, content);
  }

  /** The path of the catalog file. */
  get filePath(): string {
    return this.#filePath;
  }

  /** The cluster id Metadata reports: fixed when the catalog is first written. */
  get clusterId(): string {
    return this.#clusterId;
  }

  /** Number of topics. */
  get size(): number {
    return this.#topics.length;
  }

  /** Every topic, sorted by name. */
  topics(): readonly TopicEntry[] {
    return this.#topics;
  }

  /** The topic named `name`, if any. */
  get(name: string): TopicEntry | undefined {
    return this.#byName.get(name);
  }

  /** The topic with id `topicId` (lowercase UUID), if any. */
  byTopicId(topicId: string): TopicEntry | undefined {
    return this.#byTopicId.get(topicId);
  }

  /** The topic stored in table `tableId`, if any. */
  byTableId(tableId: number): TopicEntry | undefined {
    return this.#byTableId.get(tableId);
  }

  /** Why `name` cannot be created (an illegal name, or one colliding with a topic's), or null when it can. */
  nameProblem(name: string): string | null {
    return this.#nameProblem(name, undefined);
  }

  /** `nameProblem`, counting as taken also the collision keys of the topics a round creates. */
  #nameProblem(name: string, alsoTaken: ReadonlySet<string> | undefined): string | null {
    const problem = topicNameProblem(name);
    if (problem !== null) return problem;
    const key = collisionKey(name);
    if (!this.#byName.has(name) && (this.#collisions.has(key) || alsoTaken?.has(key) === true))
      return `topic name ${JSON.stringify(name)} collides with an existing topic ('.' and '_' are alike)`;
    return null;
  }

  /** Creates `name` with `partitions` partitions unless it exists; resolves with the topic as it is now. */
  createTopic(name: string, partitions: number): Promise<TopicEntry> {
    const existing = this.#byName.get(name);
    if (existing !== undefined) return Promise.resolve(existing);
    return this.#change(name, partitions, false);
  }

  /**
   * Makes `name` exist with exactly `partitions` partitions: creates it, or grows it. A topic with
   * more is refused (INVALID_CONFIG): partition counts never shrink, since a partition's offsets
   * would be orphaned.
   */
  ensureTopic(name: string, partitions: number): Promise<TopicEntry> {
    const existing = this.#byName.get(name);
    if (existing !== undefined && existing.partitions === partitions)
      return Promise.resolve(existing);
    return this.#change(name, partitions, true);
  }

  /**
   * Takes `authority`'s cluster id and topics (see the module comment). Resolves with the topics it
   * could not take (each with the refusal), once the rest are durable and visible.
   */
  adopt(authority: CatalogContent): Promise<readonly TopicCatalogError[]> {
    return new Promise<readonly TopicCatalogError[]>((resolve, reject) => {
      this.#pending.push({ adopt: authority, resolve, reject });
      this.#writing ??= this.#writeRounds();
    });
  }

  /**
   * From now on, creations and growths are made by `authority` and adopted from its answer (a
   * cluster's catalog, so that a topic a client's request creates is the cluster's, not this
   * copy's alone).
   */
  follow(authority: TopicAuthority): void {
    this.#authority = authority;
  }

  /** Resolves once every change requested so far has settled. */
  async idle(): Promise<void> {
    while (this.#writing !== undefined) await this.#writing;
  }

  #change(name: string, partitions: number, grow: boolean): Promise<TopicEntry> {
    return new Promise<TopicEntry>((resolve, reject) => {
      this.#pending.push({ change: { name, partitions, grow }, resolve, reject });
      this.#writing ??= this.#writeRounds();
    });
  }

  async #writeRounds(): Promise<void> {
    try {
      // The changes of one request (a Metadata naming many topics) are asked for in one go.
      await Promise.resolve();
      while (this.#pending.length > 0) {
        const round = this.#pending.splice(0);
        try {
          await this.#writeRound(round);
        } catch (error) {
          // A hearer or the store failing (a store closed under the server): the round's changes
          // fail with it, rather than wait for ever, and the next round is tried afresh. Changes
          // already answered ignore the second answer.
          for (const change of round) change.reject(error);
        }
      }
    } finally {
      this.#writing = undefined;
    }
  }

  /** Applies a round of changes in order to a copy, writes it once, installs it, answers them. */
  async #writeRound(round: readonly PendingChange[]): Promise<void> {
    if (this.#failure !== undefined) {
      for (const change of round) change.reject(this.#failedError());
      return;
    }
    // Asked only for a round that may create a topic: growing or naming existing ones takes no new
    // table id, and must not wait for (or fail with) a store that cannot tell.
    if (
      !this.#inUseChecked &&
      round.some((each) => each.change !== undefined && !this.#byName.has(each.change.name))
    ) {
      const inUse = (await this.#options.highestTableIdInUse?.()) ?? 0;
      this.#inUseChecked = true;
      if (inUse >= this.#nextTableId) {
        this.#options.onWarning?.(
          `${this.#filePath} names tables up to ${this.#nextTableId - 1}, but the store holds offsets of tables up to ${inUse} (tables committed in process, or a catalog lost or restored from an older copy): new topics take table ids from ${inUse + 1}, and those offsets belong to no topic`,
        );
        this.#nextTableId = inUse + 1;
      }
    }
    const draft: Draft = {
      changed: new Map(),
      collisions: new Set(),
      nextTableId: this.#nextTableId,
      size: this.#topics.length,
      clusterId: this.#clusterId,
    };
    let outcomes = round.map((each): TopicEntry | TopicCatalogError[] | Error => {
      try {
        return each.change !== undefined
          ? this.#plan(draft, each.change)
          : this.#planAdoption(draft, each.adopt);
      } catch (error) {
        return error as Error;
      }
    });
    const authority = this.#authority;
    const asked = round.filter(
      (each, i) =>
        each.change !== undefined &&
        !(outcomes[i] instanceof Error) &&
        draft.changed.has(each.change.name),
    );
    if (authority !== undefined && asked.length > 0)
      outcomes = await this.#askAuthority(authority, round, outcomes, draft);
    if (draft.changed.size > 0 || draft.clusterId !== this.#clusterId) {
      const byName = new Map(this.#topics.map((t) => [t.name, t]));
      for (const [name, entry] of draft.changed) byName.set(name, entry);
      const topics = [...byName.values()].sort((a, b) =>
        a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
      );
      try {
        await this.#options.checkDirectory?.();
        await writeDurably(
          this.#options.fs,
          this.#filePath,
          encodeCatalog({ clusterId: draft.clusterId, topics }),
        );
      } catch (error) {
        this.#failure = error;
        const failed = new TopicCatalogError(
          'LOG_STORAGE_ERROR',
          'failed',
          `${this.#filePath}: writing the catalog failed (${(error as Error).message}); topics cannot change until the server restarts`,
          error,
        );
        round.forEach((each, i) => {
          const outcome = outcomes[i]!;
          if (outcome instanceof Error) each.reject(outcome);
          else if (each.change === undefined || draft.changed.has(each.change.name))
            each.reject(failed);
          else each.resolve(outcome as never);
        });
        return;
      }
      this.#topics = topics;
      this.#clusterId = draft.clusterId;
      this.#nextTableId = draft.nextTableId;
      for (const entry of draft.changed.values()) this.#index(entry);
      for (const entry of draft.changed.values()) this.#options.onTopicChanged?.(entry);
    }
    round.forEach((each, i) => {
      const outcome = outcomes[i]!;
      if (outcome instanceof Error) each.reject(outcome);
      else if (each.change === undefined) each.resolve(outcome as never);
      else each.resolve((draft.changed.get(each.change.name) ?? outcome) as never);
    });
  }

  /**
   * A round's creations and growths made by the authority: `draft` is planned again as the
   * adoption of the catalog it answers with, and each change answered with its topic there, or
   * with why it is not (planned again against that catalog, or a refusal of the authority's own).
   */
  async #askAuthority(
    authority: TopicAuthority,
    round: readonly PendingChange[],
    planned: readonly (TopicEntry | TopicCatalogError[] | Error)[],
    draft: Draft,
  ): Promise<(TopicEntry | TopicCatalogError[] | Error)[]> {
    const changes: AuthorityChange[] = [];
    round.forEach((each, i) => {
      if (each.change === undefined || planned[i] instanceof Error) return;
      const entry = draft.changed.get(each.change.name);
      if (entry !== undefined)
        changes.push({ name: entry.name, partitions: entry.partitions, grow: each.change.grow });
    });
    const content = await authority(changes);
    draft.changed.clear();
    draft.collisions.clear();
    draft.nextTableId = this.#nextTableId;
    draft.size = this.#topics.length;
    const refused = this.#planAdoption(draft, content);
    return round.map((each, i) => {
      const outcome = planned[i]!;
      if (each.change === undefined) return refused;
      if (outcome instanceof Error) return outcome;
      const { name, partitions, grow } = each.change;
      const entry = draft.changed.get(name) ?? this.#byName.get(name);
      if (entry !== undefined && (!grow || entry.partitions === partitions)) return entry;
      // Not taken: why, as this catalog would say it against the authority's topics.
      try {
        const local = this.#plan(draft, each.change);
        if (draft.changed.get(name) === local) draft.changed.delete(name);
      } catch (error) {
        return error as Error;
      }
      return new TopicCatalogError(
        'INVALID_REQUEST',
        'conflict',
        `topic ${name} was not ${entry === undefined ? 'created' : 'grown'}: the catalog this one copies (${this.#filePath}) did not take it`,
      );
    });
  }

  /**
   * An adoption applied to the draft: every topic of `authority` taken that can be, the refusals of
   * the others returned.
   */
  #planAdoption(draft: Draft, authority: CatalogContent): TopicCatalogError[] {
    const refused: TopicCatalogError[] = [];
    // The draft's topics by table and by topic id (a catalog of thousands adopted at once).
    const draftByTable = new Map<number, TopicEntry>();
    const draftById = new Map<string, TopicEntry>();
    const draw = (entry: TopicEntry): void => {
      draft.changed.set(entry.name, entry);
      draftByTable.set(entry.tableId, entry);
      draftById.set(entry.topicId, entry);
    };
    for (const entry of draft.changed.values()) draw(entry);
    /** The topic that will hold `key` in `drafted` or `installed`, unless it is `name` or was redrafted. */
    const holderOf = <K>(
      drafted: Map<K, TopicEntry>,
      installed: Map<K, TopicEntry>,
      key: K,
      name: string | undefined,
    ): TopicEntry | undefined => {
      const inDraft = drafted.get(key);
      if (inDraft !== undefined && draft.changed.get(inDraft.name) === inDraft)
        return inDraft.name === name ? undefined : inDraft;
      const held = installed.get(key);
      return held === undefined || held.name === name || draft.changed.has(held.name)
        ? undefined
        : held;
    };
    const tableHolder = (tableId: number): TopicEntry | undefined =>
      holderOf(draftByTable, this.#byTableId, tableId, undefined);
    const idHolderOf = (topicId: string, name: string): TopicEntry | undefined =>
      holderOf(draftById, this.#byTopicId, topicId, name);
    for (const topic of authority.topics) {
      const existing = draft.changed.get(topic.name) ?? this.#byName.get(topic.name);
      const holder = tableHolder(topic.tableId);
      // A topic id another topic holds here: a file naming it twice would not open again.
      const idHolder = idHolderOf(topic.topicId, topic.name);
      if (idHolder !== undefined) {
        refused.push(
          new TopicCatalogError(
            'INVALID_CONFIG',
            'conflict',
            `topic ${topic.name} has topic id ${topic.topicId} in the catalog adopted, held by ${idHolder.name} in ${this.#filePath}: left as it is`,
          ),
        );
        continue;
      }
      if (existing !== undefined ? existing.tableId !== topic.tableId : holder !== undefined) {
        refused.push(
          new TopicCatalogError(
            'INVALID_CONFIG',
            'conflict',
            existing !== undefined
              ? `topic ${topic.name} is table ${existing.tableId} in ${this.#filePath} but table ${topic.tableId} in the catalog adopted: left as it is`
              : `topic ${topic.name} is table ${topic.tableId} in the catalog adopted, held by ${holder!.name} in ${this.#filePath}: not added`,
          ),
        );
        continue;
      }
      if (existing !== undefined) {
        const partitions = Math.max(existing.partitions, topic.partitions);
        if (existing.topicId !== topic.topicId || existing.partitions !== partitions)
          draw({ ...existing, topicId: topic.topicId, partitions });
        continue;
      }
      const problem = this.#nameProblem(topic.name, draft.collisions);
      if (problem !== null || draft.size >= this.#options.topicsMax) {
        refused.push(
          new TopicCatalogError(
            'INVALID_CONFIG',
            'conflict',
            `topic ${topic.name} of the catalog adopted was not added: ${problem ?? `${this.#filePath} holds ${draft.size} topics, its limit (topicsMax)`}`,
          ),
        );
        continue;
      }
      draft.size++;
      draft.collisions.add(collisionKey(topic.name));
      draft.nextTableId = Math.max(draft.nextTableId, topic.tableId + 1);
      draw(topic);
    }
    draft.clusterId = authority.clusterId;
    return refused;
  }

  /** One change applied to the draft: the topic as it will be, or a refusal thrown. */
  #plan(draft: Draft, change: TopicChange): TopicEntry {
    const { name, partitions, grow } = change;
    const existing = draft.changed.get(name) ?? this.#byName.get(name);
    if (existing !== undefined && (!grow || existing.partitions === partitions)) return existing;
    checkPartitions(name, partitions);
    if (existing !== undefined) {
      if (partitions < existing.partitions) {
        throw new TopicCatalogError(
          'INVALID_CONFIG',
          'shrink',
          `topic ${name} has ${existing.partitions} partitions; partition counts never shrink (asked for ${partitions})`,
        );
      }
      const grown = { ...existing, partitions };
      draft.changed.set(name, grown);
      return grown;
    }
    const problem = this.#nameProblem(name, draft.collisions);
    if (problem !== null)
      throw new TopicCatalogError(
        'INVALID_REQUEST',
        topicNameProblem(name) === null ? 'collision' : 'invalid-name',
        problem,
      );
    if (draft.size >= this.#options.topicsMax) {
      throw new TopicCatalogError(
        'INVALID_REQUEST',
        'topics-max',
        `the catalog holds ${draft.size} topics, its limit (topicsMax); ${name} was not created`,
      );
    }
    const entry: TopicEntry = {
      name,
      topicId: randomUUID(),
      tableId: draft.nextTableId++,
      partitions,
      createdAtMs: this.#options.nowMs(),
    };
    draft.size++;
    draft.collisions.add(collisionKey(name));
    draft.changed.set(name, entry);
    return entry;
  }

  #failedError(): TopicCatalogError {
    return new TopicCatalogError(
      'LOG_STORAGE_ERROR',
      'failed',
      `${this.#filePath}: an earlier write failed; topics cannot change until the server restarts`,
      this.#failure,
    );
  }

  #index(topic: TopicEntry): void {
    const before = this.#byName.get(topic.name);
    if (before !== undefined) this.#byTopicId.delete(before.topicId);
    this.#nextTableId = Math.max(this.#nextTableId, topic.tableId + 1);
    this.#byName.set(topic.name, topic);
    this.#byTopicId.set(topic.topicId, topic);
    this.#byTableId.set(topic.tableId, topic);
    this.#collisions.add(collisionKey(topic.name));
  }
}

/** A topic to create or grow. */
interface TopicChange {
  readonly name: string;
  readonly partitions: number;
  /** Grow (or create) to exactly `partitions`, rather than create unless it exists. */
  readonly grow: boolean;
}

/** A change asked for, waiting for its round: a topic's, or an authority's catalog to adopt. */
type PendingChange =
  | {
      readonly change: TopicChange;
      readonly adopt?: undefined;
      resolve(entry: TopicEntry): void;
      reject(error: unknown): void;
    }
  | {
      readonly change?: undefined;
      readonly adopt: CatalogContent;
      resolve(refused: readonly TopicCatalogError[]): void;
      reject(error: unknown): void;
    };

/** A round's changes, applied in order over the installed catalog before it is written. */
interface Draft {
  /** Topics created or grown by the round, by name (the last change of each). */
  readonly changed: Map<string, TopicEntry>;
  /** Collision keys of the topics the round creates. */
  readonly collisions: Set<string>;
  nextTableId: number;
  /** Topics there will be. */
  size: number;
  /** The cluster id the catalog will have. */
  clusterId: string;
}

function checkPartitions(name: string, partitions: number): void {
  const problem = partitionCountProblem(name, partitions);
  if (problem !== null) throw new TopicCatalogError('INVALID_REQUEST', 'partitions', problem);
}
