/**
 * Fetch (key 1, v4-12): this server stores no records, so every known partition is answered empty
 * (high watermark, last stable offset and log start 0, no records, no aborted transactions), and
 * whatever its fetch offset: a client must not be told its committed position is out of range and
 * reset it. Kafka's rule for when to answer is kept: at once when max_wait_ms <= 0, min_bytes <= 0,
 * no partition is asked for, or a partition has an error (UNKNOWN_TOPIC_OR_PARTITION); otherwise
 * after max_wait_ms (at most fetchWaitMsMax), since the bytes a client waits for never come. An
 * immediate empty answer would make clients spin.
 *
 * @platformatic/kafka 1.35 writes a topic's id where Fetch v12 carries its name (its v12 encoder
 * takes the id it uses for v13+); a topic name that is not in the catalog but is the id of a topic
 * that is, is read as that topic, and the answer names it as the request did, which is how that
 * client matches the answer up.
 *
 * Fetch sessions (KIP-227) are not created: the response's session id is 0, so clients send full
 * fetches. A request naming a session (session id != 0) gets FETCH_SESSION_ID_NOT_FOUND, after
 * which a client starts over with a full fetch.
 */
import { KAFKA_ERROR, type API_KEYS, type ResponseInputOf } from '../protocol/index.js';
import type { TopicEntry } from '../catalog/index.js';
import type { HandlerContext } from './handler-context.js';
import type { RequestHandler } from './request-handler.js';

const FETCH_SESSION_ID_NOT_FOUND = 70;
const NO_RECORDS = Buffer.alloc(0);
const NO_ABORTED: [] = [];
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

type FetchResponse = ResponseInputOf<typeof API_KEYS.Fetch>;

/** The catalog topic a Fetch names: by name, or by id where a client wrote the id (see above). */
export function topicNamed(context: HandlerContext, name: string): TopicEntry | undefined {
  return (
    context.catalog.get(name) ??
    (UUID_PATTERN.test(name) ? context.catalog.byTopicId(name) : undefined)
  );
}

/** Answers a Fetch empty, after its wait. */
export const handleFetch: RequestHandler<typeof API_KEYS.Fetch> = (
  context,
  request,
  header,
  peer,
) => {
  if (request.sessionId !== 0)
    return {
      throttleTimeMs: 0,
      errorCode: FETCH_SESSION_ID_NOT_FOUND,
      sessionId: 0,
      responses: [],
    };
  let failed = false;
  let partitionCount = 0;
  const response: FetchResponse = {
    throttleTimeMs: 0,
    errorCode: KAFKA_ERROR.NONE,
    sessionId: 0,
    responses: request.topics.map((topic) => {
      const entry = topicNamed(context, topic.topic);
      return {
        topic: topic.topic,
        partitions: topic.partitions.map((p) => {
          partitionCount++;
          const known = entry !== undefined && p.partition >= 0 && p.partition < entry.partitions;
          if (!known) failed = true;
          return {
            partitionIndex: p.partition,
            errorCode: known ? KAFKA_ERROR.NONE : KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION,
            highWatermark: known ? 0n : -1n,
            lastStableOffset: known ? 0n : -1n,
            logStartOffset: known ? 0n : -1n,
            abortedTransactions: NO_ABORTED,
            preferredReadReplica: -1,
            records: NO_RECORDS,
          };
        }),
      };
    }),
  };
  const waitMs = Math.min(request.maxWaitMs, context.settings.fetchWaitMsMax);
  if (failed || partitionCount === 0 || request.minBytes <= 0 || waitMs <= 0) return response;
  // Held until its wait ends, the server closes, or its connection does (nothing to answer then).
  return context.longPolls.wait(waitMs, peer.closing).then(() => response);
};
