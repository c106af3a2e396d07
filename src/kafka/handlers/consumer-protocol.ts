/**
 * The consumer protocol's embedded messages, as DescribeGroups carries them for each member
 * (Kafka's ConsumerProtocolSubscription and ConsumerProtocolAssignment, version 0; all big-endian):
 *
 * | subscription        | bytes                                          |
 * |---------------------|------------------------------------------------|
 * | version             | int16: 0                                       |
 * | topics              | int32 count, then each: int16 length, UTF-8    |
 * | user data           | int32 length (0), no bytes                     |
 *
 * | assignment          | bytes                                          |
 * |---------------------|------------------------------------------------|
 * | version             | int16: 0                                       |
 * | topic partitions    | int32 count, then each: int16 length, UTF-8 topic name, int32 count, int32 partitions |
 * | user data           | int32 length (0), no bytes                     |
 *
 * Topic names are at most 249 ASCII characters (the catalog's rule), so a name's byte length is its
 * string length.
 *
 * Every version of the subscription (0-3) begins with the version and the topics, and later
 * versions only append fields: `decodeSubscriptionTopics` reads that prefix of any of them.
 */
import { ByteReader, ByteWriter, isKafkaDecodeError } from '../protocol/index.js';

/** One topic's partitions. */
export interface TopicPartitions {
  /** The topic's name. */
  readonly topic: string;
  /** Its partition indexes, sorted. */
  readonly partitions: readonly number[];
}

/** A member's subscription (topic names) in the consumer protocol's v0 format. */
export function encodeSubscription(topics: readonly string[]): Buffer {
  const lengths = topics.map((t) => Buffer.byteLength(t, 'utf8'));
  const w = new ByteWriter(lengths.reduce((bytes, length) => bytes + 2 + length, 2 + 4 + 4));
  w.int16(0);
  w.int32(topics.length);
  for (const [i, t] of topics.entries()) {
    w.int16(lengths[i]!);
    w.utf8(t, lengths[i]!);
  }
  w.int32(0);
  return w.finish();
}

/** A member's assignment in the consumer protocol's v0 format. */
export function encodeAssignment(assignment: readonly TopicPartitions[]): Buffer {
  const lengths = assignment.map((a) => Buffer.byteLength(a.topic, 'utf8'));
  let bytes = 2 + 4 + 4;
  for (const [i, a] of assignment.entries()) bytes += 2 + lengths[i]! + 4 + 4 * a.partitions.length;
  const w = new ByteWriter(bytes);
  w.int16(0);
  w.int32(assignment.length);
  for (const [i, a] of assignment.entries()) {
    w.int16(lengths[i]!);
    w.utf8(a.topic, lengths[i]!);
    w.int32(a.partitions.length);
    for (const p of a.partitions) w.int32(p);
  }
  w.int32(0);
  return w.finish();
}

/**
 * The topics of a member's subscription in the consumer protocol (any version: see the header), or
 * undefined when the bytes are not one (a negative version, a truncated or null topic array).
 */
export function decodeSubscriptionTopics(metadata: Uint8Array): string[] | undefined {
  const bytes = Buffer.from(metadata.buffer, metadata.byteOffset, metadata.byteLength);
  const r = new ByteReader(bytes, 0, bytes.length, 'ConsumerProtocolSubscription');
  try {
    if (r.int16('version') < 0) return undefined;
    const count = r.int32('topics');
    if (count < 0) return undefined;
    r.checkCount(count, 2, 'topics');
    const topics: string[] = [];
    for (let i = 0; i < count; i++) {
      const length = r.int16('topics.name');
      if (length < 0) return undefined;
      topics.push(r.utf8(length, 'topics.name'));
    }
    return topics;
  } catch (error) {
    if (isKafkaDecodeError(error)) return undefined;
    throw error;
  }
}
