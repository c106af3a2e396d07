/**
 * src/kafka/handlers: one handler per Kafka API the server answers, over the store and the topic
 * catalog, and what they share (the handler context, the cluster view port, held Fetches, notes on
 * consumer-group members, the mapping of store errors to Kafka's codes). This file is the folder's
 * door.
 */
export { SingleNodeCluster, type BrokerEndpoint, type ClusterView } from './cluster-view.js';
export { ConsumerMemberDirectory, type MemberNotes } from './consumer-member-directory.js';
export { HandlerContext, type HandlerSettings } from './handler-context.js';
export { topicNamed as fetchedTopic } from './fetch-handler.js';
export { HANDLERS } from './handler-table.js';
export { errorMessageOf, kafkaErrorCode } from './kafka-error-code.js';
export {
  GROUP_OPERATIONS,
  OPERATIONS_NOT_ASKED,
  operationsAllowed,
  TOPIC_OPERATIONS,
} from './authorized-operations.js';
export { LongPolls } from './long-polls.js';
export { commitOffsetColumns, handleOffsetCommit } from './offset-commit-handler.js';
export {
  CLOSE_CONNECTION,
  type HandlerResult,
  type HandlerTable,
  type Peer,
  type RequestHandler,
} from './request-handler.js';
