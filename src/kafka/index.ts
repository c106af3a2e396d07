/**
 * src/kafka: Kafka's wire protocol in front of the store. protocol/ is the codec, catalog/ the
 * durable topic catalog (topic = table, partition = bucket), handlers/ one handler per API, server/
 * the node:net and node:tls server, security/ listeners, SASL, users, ACLs, limits and audit. This file is the layer's door: what the package root and the command line
 * use.
 */
export {
  KafkaServer,
  SERVER_DEFAULTS,
  startKafkaServer,
  type BoundListener,
  type ConnectionStats,
  type KafkaServerCloseOptions,
  type KafkaServerOptions,
  type KafkaServerStats,
  type TopicSpec,
} from './server/index.js';
export {
  ACLS_FILE,
  ACL_OPERATIONS,
  AclSet,
  SASL_MECHANISMS,
  SCRAM_ITERATIONS_MAX,
  SCRAM_ITERATIONS_MIN,
  SCRAM_MECHANISMS,
  USERS_FILE,
  UserCredentials,
  aclProblem,
  caCertificatesProblem,
  parseListenerAddress,
  userNameProblem,
  type AclBinding,
  type AclOperation,
  type AclPatternType,
  type AclPermission,
  type AclResourceType,
  type ListenerOptions,
  type ListenerTlsOptions,
  type QuotaLimits,
  type QuotaOptions,
  type SaslMechanism,
  type ScramMechanism,
  type SecurityOptions,
  type SecurityProtocol,
  type SecurityStats,
  type UserListing,
} from './security/index.js';
export {
  CATALOG_FILE,
  PARTITION_COUNT_MAX,
  collisionKey,
  decodeCatalog,
  encodeCatalog,
  partitionCountProblem,
  topicNameProblem,
  type AuthorityChange,
  type CatalogContent,
  type TopicAuthority,
  type TopicCatalog,
  type TopicCatalogError,
  type TopicEntry,
} from './catalog/index.js';
export type { BrokerEndpoint, ClusterView } from './handlers/index.js';
