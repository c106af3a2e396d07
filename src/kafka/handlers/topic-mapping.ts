/**
 * Between the store's terms and Kafka's: buckets of a topic's table are its partitions (bucket p =
 * partition p, no partition id), table ids are topics. Buckets of tables that are not topics of the
 * catalog, and buckets with a partition id (a partitioned table of an in-process user), have no
 * Kafka name and are left out.
 */
import type { TableBucket } from '../../model/index.js';
import type { TopicCatalog, TopicEntry } from '../catalog/index.js';

/** A topic and its partitions among some buckets. */
export interface TopicBuckets {
  /** The topic. */
  readonly topic: TopicEntry;
  /** Its partitions, sorted. */
  readonly partitions: number[];
}

/** The buckets that are partitions of catalog topics, grouped by topic (in topic name order). */
export function bucketsByTopic(
  catalog: TopicCatalog,
  buckets: readonly TableBucket[],
): TopicBuckets[] {
  const byTable = new Map<number, TopicBuckets>();
  for (const b of buckets) {
    if (b.partitionId !== null) continue;
    let group = byTable.get(b.tableId);
    if (group === undefined) {
      const topic = catalog.byTableId(b.tableId);
      if (topic === undefined || b.bucketId >= topic.partitions) continue;
      byTable.set(b.tableId, (group = { topic, partitions: [] }));
    }
    group.partitions.push(b.bucketId);
  }
  const groups = [...byTable.values()];
  for (const g of groups) g.partitions.sort((a, b) => a - b);
  return groups.sort((a, b) =>
    a.topic.name < b.topic.name ? -1 : a.topic.name > b.topic.name ? 1 : 0,
  );
}

/** The names of the catalog topics among some table ids, sorted. */
export function topicNamesOf(catalog: TopicCatalog, tableIds: readonly number[]): string[] {
  const names: string[] = [];
  for (const tableId of tableIds) {
    const topic = catalog.byTableId(tableId);
    if (topic !== undefined) names.push(topic.name);
  }
  return names.sort();
}
