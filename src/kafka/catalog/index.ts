/**
 * src/kafka/catalog: the durable topic catalog of the Kafka front end (topic = table, partition =
 * bucket), kept in `kafka-topics.json` in the store directory, and Kafka's topic-name rules. This
 * file is the folder's door.
 */
export {
  CATALOG_FILE,
  CATALOG_FORMAT_VERSION,
  PARTITION_COUNT_MAX,
  decodeCatalog,
  partitionCountProblem,
  encodeCatalog,
  type CatalogContent,
  type TopicEntry,
} from './catalog-file.js';
export {
  PATTERN_CHARS_MAX,
  PROGRAM_MAX,
  RESOLUTION_STEPS_MAX,
  TopicRegex,
  TopicRegexError,
  TopicRegexResolver,
} from './topic-regex.js';
export { TOPIC_NAME_LENGTH_MAX, collisionKey, topicNameProblem } from './topic-name.js';
export {
  TopicCatalog,
  TopicCatalogError,
  type AuthorityChange,
  type TopicAuthority,
  type TopicCatalogOptions,
  type TopicRefusal,
} from './topic-catalog.js';
