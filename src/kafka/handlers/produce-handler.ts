/**
 * Produce (key 0, v3-9): advertised only because librdkafka fetches only from a broker that
 * advertises Produce >= 3 (its MSGVER2 feature). This server stores no records: every partition of
 * a produce is answered with an error, INVALID_REQUEST with a message saying so (v8+), or
 * UNKNOWN_TOPIC_OR_PARTITION for a partition the catalog does not have. A produce with acks=0
 * expects no response; as Kafka does for an acks=0 produce it refuses, the connection is closed.
 */
import { KAFKA_ERROR, type API_KEYS } from '../protocol/index.js';
import { CLOSE_CONNECTION, type RequestHandler } from './request-handler.js';

const REFUSAL = 'offset-store serves consumer groups and committed offsets; it stores no records';

/** Refuses every partition of a produce. */
export const handleProduce: RequestHandler<typeof API_KEYS.Produce> = (context, request) => {
  if (request.acks === 0) return CLOSE_CONNECTION;
  return {
    responses: request.topicData.map((topic) => {
      const entry = context.catalog.get(topic.name);
      return {
        name: topic.name,
        partitionResponses: topic.partitionData.map((p) => {
          const known = entry !== undefined && p.index >= 0 && p.index < entry.partitions;
          return {
            index: p.index,
            errorCode: known ? KAFKA_ERROR.INVALID_REQUEST : KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION,
            baseOffset: -1n,
            errorMessage: known ? REFUSAL : null,
          };
        }),
      };
    }),
    throttleTimeMs: 0,
  };
};
