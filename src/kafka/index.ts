/**
 * src/kafka: Kafka's wire protocol in front of the store. protocol/ is the codec, catalog/ the
 * durable topic catalog (topic = table, partition = bucket), handlers/ one handler per API, server/
 * the node:net server. This file is the layer's door: what the package root and the command line
 * use.
 */
export {
  KafkaServer, SERVER_DEFAULTS, startKafkaServer, type ConnectionStats, type KafkaServerCloseOptions, type KafkaServerOptions, type KafkaServerStats, type TopicSpec,
} from './server/index.js';
export { CATALOG_FILE, type TopicEntry } from './catalog/index.js';
export type { BrokerEndpoint, ClusterView } from './handlers/index.js';
