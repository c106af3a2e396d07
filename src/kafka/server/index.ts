/**
 * src/kafka/server: the Kafka wire-protocol server (node:net): per-connection framing, ordering and
 * bounds, request routing to the handlers, the server's options and lifecycle. This file is the
 * folder's door.
 */
export { FrameReader } from './frame-reader.js';
export {
  KafkaConnection,
  type ConnectionLimits,
  type ConnectionStats,
} from './kafka-connection.js';
export {
  KafkaServer,
  startKafkaServer,
  type BoundListener,
  type KafkaServerCloseOptions,
  type KafkaServerStats,
} from './kafka-server.js';
export { RequestRouter, type Routed } from './request-router.js';
export {
  SERVER_DEFAULTS,
  resolveServerOptions,
  type KafkaServerOptions,
  type ResolvedServerOptions,
  type TopicSpec,
} from './server-options.js';
