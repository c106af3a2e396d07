/**
 * `kafka-topics.json`, the topic catalog's file in the store directory: which Kafka topic is which
 * table of the store. Written whole and atomically (temp file, fdatasync, rename, directory fsync,
 * through the store's file-system port), checksummed, and never trusted without its checksum: a
 * damaged or hand-edited catalog is CORRUPT_MESSAGE naming the file, not a catalog served with
 * topics missing or renumbered (a topic whose table id changed would show other groups' offsets).
 *
 * | field            | meaning                                                                     |
 * |------------------|-----------------------------------------------------------------------------|
 * | formatVersion    | 1                                                                           |
 * | clusterId        | the cluster id Metadata reports: 22 characters, base64url of 16 random bytes |
 * | topics[]         | `{ name, topicId, tableId, partitions, createdAtMs }`, sorted by name       |
 * | checksum         | xxh32 of the UTF-8 JSON of every other field, in this order                 |
 *
 * Per topic: `name` (Kafka's rules, topic-name.ts), `topicId` (a random UUID, stable for the
 * topic's life: Metadata v10+ and consumer-group assignments name topics by it), `tableId` (the
 * store table holding its offsets; partition p is bucket p of that table, with no partition id),
 * `partitions` (1 to PARTITION_COUNT_MAX; grows, never shrinks), `createdAtMs`. Names, topic ids,
 * table ids and colliding names (`.` read as `_`) are unique.
 */
import { xxh32 } from '../../codec/index.js';
import { OffsetStoreError } from '../../errors/index.js';
import { collisionKey, topicNameProblem } from './topic-name.js';

/** The catalog format this build reads and writes. */
export const CATALOG_FORMAT_VERSION = 1;
/** The catalog's file name in the store directory. */
export const CATALOG_FILE = 'kafka-topics.json';
/** Most partitions of one topic. */
export const PARTITION_COUNT_MAX = 65_536;

/** Why `partitions` cannot be topic `name`'s partition count, or null when it can (1 to PARTITION_COUNT_MAX). */
export function partitionCountProblem(name: string, partitions: number): string | null {
  return Number.isSafeInteger(partitions) && partitions >= 1 && partitions <= PARTITION_COUNT_MAX
    ? null
    : `topic ${name}: the partition count must be an integer in [1, ${PARTITION_COUNT_MAX}], got ${partitions}`;
}

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const CLUSTER_ID_PATTERN = /^[A-Za-z0-9_-]{22}$/;

/** One topic of the catalog. */
export interface TopicEntry {
  /** The topic's name. */
  readonly name: string;
  /** Its stable id (lowercase UUID), as Metadata v10+ and consumer-group assignments give it. */
  readonly topicId: string;
  /** The store table holding its committed offsets; partition p is bucket p. */
  readonly tableId: number;
  /** Its partition count (buckets of the table). */
  readonly partitions: number;
  /** When it was created, ms since the epoch. */
  readonly createdAtMs: number;
}

/** The catalog's content. */
export interface CatalogContent {
  /** The cluster id Metadata reports. */
  readonly clusterId: string;
  /** Every topic, sorted by name. */
  readonly topics: readonly TopicEntry[];
}

function canonical(content: CatalogContent): string {
  return JSON.stringify({
    formatVersion: CATALOG_FORMAT_VERSION,
    clusterId: content.clusterId,
    topics: content.topics.map((t) => ({
      name: t.name,
      topicId: t.topicId,
      tableId: t.tableId,
      partitions: t.partitions,
      createdAtMs: t.createdAtMs,
    })),
  });
}

/** The file's bytes: one topic a line, so a diff of two versions reads well. */
export function encodeCatalog(content: CatalogContent): Buffer {
  const topics = content.topics.map(
    (t, i) =>
      `    ${JSON.stringify({ name: t.name, topicId: t.topicId, tableId: t.tableId, partitions: t.partitions, createdAtMs: t.createdAtMs })}${i < content.topics.length - 1 ? ',' : ''}`,
  );
  const lines = [
    '{',
    `  "formatVersion": ${CATALOG_FORMAT_VERSION},`,
    `  "clusterId": ${JSON.stringify(content.clusterId)},`,
    '  "topics": [',
    ...topics,
    '  ],',
    `  "checksum": ${xxh32(Buffer.from(canonical(content), 'utf8'))}`,
    '}',
    '',
  ];
  return Buffer.from(lines.join('\n'), 'utf8');
}

function corrupt(filePath: string, reason: string, cause?: unknown): OffsetStoreError {
  return new OffsetStoreError(
    'CORRUPT_MESSAGE',
    `${filePath}: ${reason}`,
    cause === undefined ? undefined : { cause },
  );
}

/** Parses and checks a catalog file; CORRUPT_MESSAGE for anything damaged, INVALID_CONFIG for another format version. */
export function decodeCatalog(filePath: string, bytes: Buffer): CatalogContent {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw corrupt(filePath, 'not valid JSON', error);
  }
  const file = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<
    string,
    unknown
  >;
  if (typeof file.formatVersion !== 'number') throw corrupt(filePath, 'no formatVersion');
  if (file.formatVersion !== CATALOG_FORMAT_VERSION) {
    throw new OffsetStoreError(
      'INVALID_CONFIG',
      `${filePath} has format version ${file.formatVersion}; this build reads version ${CATALOG_FORMAT_VERSION}`,
    );
  }
  if (typeof file.clusterId !== 'string' || !CLUSTER_ID_PATTERN.test(file.clusterId))
    throw corrupt(filePath, 'no valid clusterId');
  if (!Array.isArray(file.topics)) throw corrupt(filePath, 'no topics array');
  const topics = file.topics.map((t: unknown) => decodeTopic(filePath, t));
  const content: CatalogContent = { clusterId: file.clusterId, topics };
  if (file.checksum !== xxh32(Buffer.from(canonical(content), 'utf8')))
    throw corrupt(filePath, 'checksum mismatch: the catalog was damaged or edited by hand');
  checkUnique(filePath, topics);
  return content;
}

function decodeTopic(filePath: string, value: unknown): TopicEntry {
  const t = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const { name, topicId, tableId, partitions, createdAtMs } = t;
  const valid =
    typeof name === 'string' &&
    topicNameProblem(name) === null &&
    typeof topicId === 'string' &&
    UUID_PATTERN.test(topicId) &&
    Number.isSafeInteger(tableId) &&
    (tableId as number) >= 0 &&
    typeof partitions === 'number' &&
    partitionCountProblem(name, partitions) === null &&
    Number.isSafeInteger(createdAtMs);
  if (!valid) throw corrupt(filePath, `topic record ${JSON.stringify(value)} is malformed`);
  return {
    name: name as string,
    topicId: topicId as string,
    tableId: tableId as number,
    partitions: partitions as number,
    createdAtMs: createdAtMs as number,
  };
}

function checkUnique(filePath: string, topics: readonly TopicEntry[]): void {
  const names = new Set<string>();
  const topicIds = new Set<string>();
  const tableIds = new Set<number>();
  for (const t of topics) {
    const name = collisionKey(t.name);
    if (names.has(name) || topicIds.has(t.topicId) || tableIds.has(t.tableId)) {
      throw corrupt(
        filePath,
        `topic ${JSON.stringify(t.name)} repeats a name, topic id or table id of another topic`,
      );
    }
    names.add(name);
    topicIds.add(t.topicId);
    tableIds.add(t.tableId);
  }
}
