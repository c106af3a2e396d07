/**
 * Metadata (key 3, v0-12): the brokers (this server, at the advertised address of the listener the
 * request came in on: kafkajs matches the broker to its bootstrap connection by exact host and port), the cluster id, and the topics asked
 * for (v0: an empty list means all; v1+: null means all) with their partitions, each led by this
 * server with itself as the only replica. Topic ids from v10; a topic asked for by id (v12+, name
 * null) that does not exist is UNKNOWN_TOPIC_ID; v10-11 asking by id (a null name, or an id) is
 * INVALID_REQUEST for every topic, as in Kafka.
 *
 * An unknown topic is created (in the durable catalog, before it is named in the answer) when the
 * request allows it (allow_auto_topic_creation, always in v0-3) and the server does
 * (autoCreateTopics), with defaultPartitions partitions; otherwise, and always for Kafka's internal
 * topics (`__consumer_offsets`, `__transaction_state`), it is UNKNOWN_TOPIC_OR_PARTITION.
 * An illegal or colliding name is INVALID_TOPIC_EXCEPTION, a full catalog POLICY_VIOLATION, a
 * catalog that failed to write KAFKA_STORAGE_ERROR.
 */
import { KAFKA_ERROR, ZERO_UUID, type API_KEYS, type ResponseInputOf } from '../protocol/index.js';
import { TopicCatalogError, type TopicEntry } from '../catalog/index.js';
import type { HandlerContext } from './handler-context.js';
import type { RequestHandler } from './request-handler.js';
import { mapInTurns } from './in-turns.js';
import {
  ALL_TOPIC_OPERATIONS,
  CLUSTER_OPERATIONS,
  OPERATIONS_NOT_ASKED,
} from './authorized-operations.js';

type MetadataResponse = ResponseInputOf<typeof API_KEYS.Metadata>;
type TopicMetadata = NonNullable<MetadataResponse['topics']>[number];
type PartitionMetadata = NonNullable<TopicMetadata['partitions']>[number];

/** Topics Kafka's brokers keep for themselves (offsets, transactions): never auto-created here. */
const KAFKA_INTERNAL_TOPICS = new Set(['__consumer_offsets', '__transaction_state']);

/** The partitions of a topic entry, built once per entry (an entry is replaced when the topic grows). */
const partitionCache = new WeakMap<TopicEntry, PartitionMetadata[]>();

function partitionsOf(context: HandlerContext, topic: TopicEntry): PartitionMetadata[] {
  let partitions = partitionCache.get(topic);
  if (partitions === undefined) {
    partitions = [];
    for (let p = 0; p < topic.partitions; p++) {
      const leader = context.cluster.leaderOf(topic.name, p).nodeId;
      partitions.push({
        errorCode: KAFKA_ERROR.NONE,
        partitionIndex: p,
        leaderId: leader,
        leaderEpoch: -1,
        replicaNodes: [leader],
        isrNodes: [leader],
        offlineReplicas: [],
      });
    }
    partitionCache.set(topic, partitions);
  }
  return partitions;
}

/** `operations`: the topic's authorized operations, or OPERATIONS_NOT_ASKED. */
function described(context: HandlerContext, topic: TopicEntry, operations: number): TopicMetadata {
  return {
    errorCode: KAFKA_ERROR.NONE,
    name: topic.name,
    topicId: topic.topicId,
    isInternal: false,
    partitions: partitionsOf(context, topic),
    topicAuthorizedOperations: operations,
  };
}

function failed(
  errorCode: number,
  name: string | null,
  topicId = ZERO_UUID,
  operations = OPERATIONS_NOT_ASKED,
): TopicMetadata {
  return {
    errorCode,
    name,
    topicId,
    isInternal: false,
    partitions: [],
    // Kafka reports them for every topic it answers by name, found or not.
    topicAuthorizedOperations: name === null ? OPERATIONS_NOT_ASKED : operations,
  };
}

function creationFailure(
  context: HandlerContext,
  name: string,
  error: unknown,
  operations: number,
): TopicMetadata {
  if (error instanceof TopicCatalogError) {
    const code =
      error.refusal === 'invalid-name' || error.refusal === 'collision'
        ? KAFKA_ERROR.INVALID_TOPIC_EXCEPTION
        : error.refusal === 'topics-max'
          ? KAFKA_ERROR.POLICY_VIOLATION
          : error.refusal === 'failed'
            ? KAFKA_ERROR.KAFKA_STORAGE_ERROR
            : KAFKA_ERROR.INVALID_REQUEST;
    return failed(code, name, ZERO_UUID, operations);
  }
  return failed(context.errorCodeOf(error, `creating topic ${name}`), name, ZERO_UUID, operations);
}

/** Answers Metadata, creating unknown topics when allowed. */
export const handleMetadata: RequestHandler<typeof API_KEYS.Metadata> = (
  context,
  request,
  header,
  peer,
) => {
  const { catalog, cluster } = context;
  const base = {
    throttleTimeMs: 0,
    brokers: cluster
      .brokers(peer.listenerName)
      .map((b) => ({ nodeId: b.nodeId, host: b.host, port: b.port, rack: null })),
    clusterId: catalog.clusterId,
    controllerId: cluster.self.nodeId,
    clusterAuthorizedOperations: request.includeClusterAuthorizedOperations
      ? CLUSTER_OPERATIONS
      : OPERATIONS_NOT_ASKED,
  };
  const operations = request.includeTopicAuthorizedOperations
    ? ALL_TOPIC_OPERATIONS
    : OPERATIONS_NOT_ASKED;
  const asked = request.topics;
  if (asked === null || (header.apiVersion === 0 && asked.length === 0)) {
    return { ...base, topics: catalog.topics().map((t) => described(context, t, operations)) };
  }
  // v10-11 carry topic ids but may not ask by them: Kafka refuses a null name, or an id, there
  // (INVALID_REQUEST for every topic of the request).
  if (header.apiVersion < 12 && asked.some((t) => t.name === null || t.topicId !== ZERO_UUID))
    return {
      ...base,
      topics: asked.map((t) =>
        failed(KAFKA_ERROR.INVALID_REQUEST, t.name ?? '', t.topicId, operations),
      ),
    };
  const mayCreate =
    context.settings.autoCreateTopics && (header.apiVersion < 4 || request.allowAutoTopicCreation);
  const seen = new Set<string>();
  /** Topics this request asked the catalog to create: at most the room it has left. */
  let creating = 0;
  // A request may name a million topics: worked through in turns (in-turns.ts), so that it does
  // not hold the other connections for seconds (~3 us a name).
  const answerOf = ({
    name,
    topicId,
  }: (typeof asked)[number]): TopicMetadata | Promise<TopicMetadata> | undefined => {
    const key = name ?? `id:${topicId}`;
    if (seen.has(key)) return undefined;
    seen.add(key);
    if (name === null) {
      const entry = catalog.byTopicId(topicId);
      return entry === undefined
        ? failed(KAFKA_ERROR.UNKNOWN_TOPIC_ID, null, topicId)
        : described(context, entry, operations);
    }
    const entry = catalog.get(name);
    if (entry !== undefined) return described(context, entry, operations);
    if (catalog.nameProblem(name) !== null)
      return failed(KAFKA_ERROR.INVALID_TOPIC_EXCEPTION, name, ZERO_UUID, operations);
    // Kafka's own internal topics are not this server's to create: one made here would be an
    // ordinary topic (isInternal false) that clients subscribing by pattern would take up.
    if (!mayCreate || KAFKA_INTERNAL_TOPICS.has(name))
      return failed(KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION, name, ZERO_UUID, operations);
    // Refused here, not by the catalog: a refusal there is an error built (with its stack) per
    // name, and a request can name a million (12-25 us each: seconds of the event loop).
    if (catalog.size + creating >= catalog.topicsMax)
      return failed(KAFKA_ERROR.POLICY_VIOLATION, name, ZERO_UUID, operations);
    creating++;
    return catalog.createTopic(name, context.settings.defaultPartitions).then(
      (created) => described(context, created, operations),
      (error: unknown) => creationFailure(context, name, error, operations),
    );
  };
  return mapInTurns(asked, answerOf, (answers): MetadataResponse | Promise<MetadataResponse> => {
    const topics = answers.filter((a) => a !== undefined);
    if (creating === 0) return { ...base, topics: topics as TopicMetadata[] };
    return Promise.all(topics).then((all) => ({ ...base, topics: all }));
  }) as MetadataResponse | Promise<MetadataResponse>;
};
