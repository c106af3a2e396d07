/**
 * ConsumerGroupHeartbeat (key 68, v0-1): Kafka's consumer group protocol (KIP-848), served by the
 * store's own group coordinator (`store.heartbeat`), which implements the same protocol over table
 * buckets. This handler translates:
 *
 * | Kafka request                    | store heartbeat                                             |
 * |----------------------------------|-------------------------------------------------------------|
 * | member_id ('' on a v0 join)      | memberId (omitted: the store generates one)                 |
 * | member_epoch                     | memberEpoch (0 join, -1 leave, -2 static leave, > 0)        |
 * | instance_id                      | instanceId                                                  |
 * | rebalance_timeout_ms (-1: same)  | rebalanceTimeoutMs (at most one day)                        |
 * | subscribed_topic_names (null: same) | subscribedTableIds: the tables of the topics that exist  |
 * | server_assignor (null: same)     | assignor: 'uniform' or 'range'; others UNSUPPORTED_ASSIGNOR |
 * | topic_partitions (owned; null: same) | ownedBuckets: bucket p of the topic's table per partition p |
 *
 * and back: the member id and epoch, the heartbeat interval, and the assignment (when the store
 * sends one) as topic ids and partitions. Subscribed names are remembered per member
 * (consumer-member-directory.ts), so a topic created after a member subscribed to it reaches the
 * store with the member's next heartbeat even when that heartbeat omits the subscription; and
 * then, as Kafka refreshes a whole group, the other members that named it too, in the same epoch
 * (REFRESH_SUBSCRIPTIONS; not with an authorizer, whose answer for other principals is not at hand).
 *
 * Requests are checked as Kafka checks them (INVALID_REQUEST with a message): a group id, a member
 * id except on a v0 join, an instance id if any, a rebalance timeout and a subscription and no
 * owned partitions on a join, an epoch of -2 or more, -2 only with an instance id. A subscription
 * by regular expression (v1) takes every catalog topic whose whole name it matches, resolved again
 * when topics are created (topic-regex.ts: linear-time matching, RE2's syntax for topic names); one
 * refused is INVALID_REGULAR_EXPRESSION, and an empty one is none, as Kafka reads it. Of the topics
 * it matches, those the principal may not describe are left out (`Peer.mayDescribeTopic`). Store
 * errors go out as Kafka's codes (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, GROUP_MAX_SIZE_REACHED,
 * UNRELEASED_INSTANCE_ID, ...).
 */
import {
  CLASSIC_NAME_LENGTH_MAX,
  MEMBER_TIMEOUT_MS_MAX,
  type HeartbeatRequest,
  type HeartbeatResponse,
  type SubscriptionRefresh,
} from '../../group/index.js';
import { cutWellFormed, type TableBucket } from '../../model/index.js';
import {
  KAFKA_ERROR,
  type API_KEYS,
  type RequestOf,
  type ResponseInputOf,
} from '../protocol/index.js';
import { TopicRegexError, topicNameProblem } from '../catalog/index.js';
import type { HandlerContext } from './handler-context.js';
import { errorMessageOf } from './kafka-error-code.js';
import type { MemberNotes } from './consumer-member-directory.js';
import type { Peer, RequestHandler } from './request-handler.js';
import { bucketsByTopic } from './topic-mapping.js';
import { REFRESH_SUBSCRIPTIONS } from '../../store.js';

type HeartbeatAnswer = ResponseInputOf<typeof API_KEYS.ConsumerGroupHeartbeat>;
type KafkaHeartbeat = RequestOf<typeof API_KEYS.ConsumerGroupHeartbeat>;

const ASSIGNORS = new Set(['uniform', 'range']);

/** Refusals of remembered expressions already reported. */
const warnedRefusals = new WeakSet<TopicRegexError>();

function refused(errorCode: number, errorMessage: string): HeartbeatAnswer {
  return {
    throttleTimeMs: 0,
    errorCode,
    errorMessage: errorMessageOf(errorMessage),
    memberId: null,
    memberEpoch: 0,
    heartbeatIntervalMs: 0,
    assignment: null,
  };
}

/** Kafka's checks of a heartbeat; the reason it is invalid, or null. */
function invalidity(request: KafkaHeartbeat, version: number, topicsMax: number): string | null {
  const { groupId, memberId, memberEpoch, instanceId } = request;
  if (groupId === '') return "GroupId can't be empty.";
  // Names are remembered per member (consumer-member-directory.ts): no more than could be topics.
  if (request.subscribedTopicNames !== null && request.subscribedTopicNames.length > topicsMax)
    return `SubscribedTopicNames holds ${request.subscribedTopicNames.length} names; this server has at most ${topicsMax} topics.`;
  if (instanceId === '') return "InstanceId can't be empty.";
  if (request.rackId === '') return "RackId can't be empty.";
  if (memberEpoch < -2) return `MemberEpoch ${memberEpoch} is invalid.`;
  if (memberEpoch === -2 && instanceId === null)
    return 'InstanceId must be set with MemberEpoch -2.';
  if (memberId === '' && (memberEpoch !== 0 || version >= 1)) return "MemberId can't be empty.";
  if (memberEpoch === 0) {
    if (request.rebalanceTimeoutMs === -1)
      return 'RebalanceTimeoutMs must be provided in first request.';
    if (request.topicPartitions === null || request.topicPartitions.length > 0)
      return 'TopicPartitions must be empty when (re-)joining.';
    // As Kafka: an empty list of names, or an empty expression, subscribes to nothing.
    const names = request.subscribedTopicNames;
    const regex = request.subscribedTopicRegex;
    if ((names === null || names.length === 0) && (regex === null || regex === ''))
      return 'SubscribedTopicNames or SubscribedTopicRegex must be set in first request.';
  }
  return null;
}

/** The table ids of the catalog topics among `names`, sorted. */
function tableIdsOf(context: HandlerContext, names: readonly string[]): number[] {
  const ids: number[] = [];
  for (const name of names) {
    const topic = context.catalog.get(name);
    if (topic !== undefined) ids.push(topic.tableId);
  }
  return ids.sort((a, b) => a - b);
}

/** The tables of `tableIds` whose topics the peer may describe (all without an authorizer). */
function describable(
  context: HandlerContext,
  peer: Peer,
  tableIds: readonly number[],
): readonly number[] {
  const may = peer.mayDescribeTopic;
  if (may === undefined) return tableIds;
  return tableIds.filter((id) => {
    const topic = context.catalog.byTableId(id);
    return topic !== undefined && may.call(peer, topic.name);
  });
}

/** The sorted union of two sorted id lists. */
function union(a: readonly number[], b: readonly number[]): number[] {
  if (b.length === 0) return [...a];
  return [...new Set([...a, ...b])].sort((x, y) => x - y);
}

function sameIds(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((id, i) => id === b[i]);
}

/** The Kafka assignment of a store assignment: topic ids and partitions. */
function assignmentOf(
  context: HandlerContext,
  assignment: readonly TableBucket[],
): HeartbeatAnswer['assignment'] {
  return {
    topicPartitions: bucketsByTopic(context.catalog, assignment).map((t) => ({
      topicId: t.topic.topicId,
      partitions: t.partitions,
    })),
  };
}

/** Runs one KIP-848 heartbeat through the store's coordinator. */
export const handleConsumerGroupHeartbeat: RequestHandler<
  typeof API_KEYS.ConsumerGroupHeartbeat
> = async (context, request, header, peer) => {
  const problem = invalidity(request, header.apiVersion, context.catalog.topicsMax);
  if (problem !== null) return refused(KAFKA_ERROR.INVALID_REQUEST, problem);
  const assignor = request.serverAssignor;
  if (assignor !== null && !ASSIGNORS.has(assignor))
    return refused(
      KAFKA_ERROR.UNSUPPORTED_ASSIGNOR,
      `Assignor ${assignor} is not supported: this server has 'uniform' and 'range'.`,
    );
  const { groupId, memberId, memberEpoch } = request;
  const notes =
    memberId === '' || memberEpoch === 0 ? undefined : context.members.get(groupId, memberId);
  // A name that is not a valid topic name can never match a topic: it is not remembered.
  const topicNames =
    request.subscribedTopicNames === null
      ? notes?.topicNames
      : [...new Set(request.subscribedTopicNames)]
          .filter((name) => topicNameProblem(name) === null)
          .sort();
  // The expression: null leaves it as it was, '' is none (as Kafka reads it: librdkafka 2.15 sends
  // '' beside its topic names). One not known (since a restart) is none: a member that then sends
  // names without it is subscribed to those names alone until it sends it again.
  const topicRegex =
    request.subscribedTopicRegex === null
      ? notes?.topicRegex
      : request.subscribedTopicRegex === ''
        ? undefined
        : request.subscribedTopicRegex;
  // A leave (-1, -2) needs no subscription. An expression is refused only by the heartbeat that
  // sends it, as in Kafka: one accepted before that a grown catalog makes too costly keeps the
  // member on the tables last sent for it (with a warning), and never fails its heartbeats.
  let regexTableIds: readonly number[] | undefined = [];
  if (topicRegex !== undefined && memberEpoch >= 0) {
    try {
      regexTableIds = describable(context, peer, await context.topicRegexes.tableIds(topicRegex));
    } catch (error) {
      if (!(error instanceof TopicRegexError)) throw error;
      if (request.subscribedTopicRegex !== null)
        return refused(KAFKA_ERROR.INVALID_REGULAR_EXPRESSION, error.message);
      // Once per refusal (the resolver keeps one per expression until the catalog changes).
      if (!warnedRefusals.has(error)) {
        warnedRefusals.add(error);
        context.warn(
          `consumer group ${groupId}: members keep the topics their expression matched before: ${error.message}`,
        );
      }
      regexTableIds = notes?.regexTableIds;
    }
  }
  const tableIds =
    memberEpoch < 0 ||
    regexTableIds === undefined ||
    (topicNames === undefined && topicRegex === undefined)
      ? undefined
      : union(tableIdsOf(context, topicNames ?? []), regexTableIds);
  // A topic created since this member's subscription was last resolved: the group's other members
  // that named it are moved too, in the same epoch (as Kafka refreshes a group's subscription
  // metadata on the next heartbeat of any member), so that this one is not given all of it.
  const catalogMoved =
    tableIds !== undefined &&
    memberEpoch > 0 &&
    request.subscribedTopicNames === null &&
    request.subscribedTopicRegex === null &&
    notes?.tableIds !== undefined &&
    !sameIds(tableIds, notes.tableIds);
  const heartbeat: HeartbeatRequest = {
    memberEpoch,
    ...(memberId === '' ? {} : { memberId }),
    ...(request.instanceId === null ? {} : { instanceId: request.instanceId }),
    // Sent when asked, and when a topic of a remembered subscription appeared (or went) since.
    ...(tableIds !== undefined &&
    (request.subscribedTopicNames !== null ||
      request.subscribedTopicRegex !== null ||
      notes === undefined ||
      notes.tableIds === undefined ||
      !sameIds(tableIds, notes.tableIds))
      ? { subscribedTableIds: tableIds }
      : {}),
    ...(request.topicPartitions === null
      ? {}
      : { ownedBuckets: ownedBuckets(context, request.topicPartitions) }),
    ...(request.rebalanceTimeoutMs > 0
      ? { rebalanceTimeoutMs: Math.min(request.rebalanceTimeoutMs, MEMBER_TIMEOUT_MS_MAX) }
      : {}),
    ...(assignor === null ? {} : { assignor }),
  };
  // The notes this heartbeat leaves must fit beside those of the members the store holds (the
  // directory never drops those for another's): asked before the store changes anything.
  const seen = {
    topicNames,
    topicRegex,
    regexTableIds,
    tableIds,
    clientId: header.clientId,
    rackId: request.rackId,
    peer,
  };
  if (memberEpoch >= 0 && !context.members.fits(groupId, memberId, notesOf(seen, notes)))
    return refused(
      KAFKA_ERROR.COORDINATOR_NOT_AVAILABLE,
      `the server keeps the subscriptions of at most ${context.members.membersMax} members and ${context.members.charsMax} characters of topic names, and the members of its groups hold them all now: try again once members have left, or subscribe to fewer names`,
    );
  // After every check of the request's own, and only for the member at this epoch: a heartbeat
  // that will be refused (fenced, a stale epoch, no room) moves no one.
  if (catalogMoved)
    await refreshGroup(context, groupId, memberId, memberEpoch, notes!.tableIds!, tableIds!, peer);
  let response: HeartbeatResponse;
  try {
    response = await context.store.heartbeat(groupId, heartbeat);
  } catch (error) {
    const code = context.errorCodeOf(error, 'ConsumerGroupHeartbeat');
    // Only a member the store does not hold is forgotten: a fenced epoch, or an instance id no
    // member holds (UNKNOWN_MEMBER_ID too), leaves the member as it was, and member ids are public
    // (ConsumerGroupDescribe), so anyone can send a wrong one.
    if (code === KAFKA_ERROR.UNKNOWN_MEMBER_ID) context.members.deleteUnheld(groupId, memberId);
    return refused(code, (error as Error).message);
  }
  remember(context, groupId, response, seen);
  return {
    throttleTimeMs: 0,
    errorCode: KAFKA_ERROR.NONE,
    errorMessage: null,
    memberId: response.memberId,
    memberEpoch: response.memberEpoch,
    heartbeatIntervalMs: response.heartbeatIntervalMs,
    assignment:
      response.assignment === undefined ? null : assignmentOf(context, response.assignment),
  };
};

/**
 * Resolves the remembered subscriptions of `groupId`'s other members against the catalog and moves
 * those whose tables changed, with `memberId` on `tableIds`, in one epoch (REFRESH_SUBSCRIPTIONS).
 * Not with an authorizer (the other members' principals are not at hand to ask whether they may
 * describe the new topics) and not when anything fails: each member then moves with its own next
 * heartbeat, as before.
 */
async function refreshGroup(
  context: HandlerContext,
  groupId: string,
  memberId: string,
  memberEpoch: number,
  from: readonly number[],
  tableIds: readonly number[],
  peer: Peer,
): Promise<void> {
  if (peer.mayDescribeTopic !== undefined) return;
  try {
    const updates = new Map<string, SubscriptionRefresh>();
    const moved: [string, MemberNotes, readonly number[], readonly number[] | undefined][] = [];
    const { members } = await context.store.describeGroup(groupId);
    if (!members.some((m) => m.memberId === memberId && m.memberEpoch === memberEpoch)) return;
    for (const member of members) {
      if (member.memberId === memberId) continue;
      const notes = context.members.get(groupId, member.memberId);
      if (notes?.tableIds === undefined) continue;
      let regexIds = notes.regexTableIds;
      if (notes.topicRegex !== undefined) {
        try {
          regexIds = await context.topicRegexes.tableIds(notes.topicRegex);
        } catch (error) {
          if (!(error instanceof TopicRegexError)) throw error;
        }
      }
      const resolved = union(tableIdsOf(context, notes.topicNames ?? []), regexIds ?? []);
      if (sameIds(resolved, notes.tableIds)) continue;
      // From the tables last sent for it: one that moved meanwhile (its own heartbeat) stays.
      updates.set(member.memberId, { from: notes.tableIds, to: resolved });
      moved.push([member.memberId, notes, resolved, regexIds]);
    }
    if (updates.size === 0) return;
    updates.set(memberId, { from, to: tableIds });
    await context.store[REFRESH_SUBSCRIPTIONS](groupId, updates);
    for (const [id, notes, resolved, regexIds] of moved) {
      // Unless a heartbeat of its own noted it anew meanwhile.
      if (context.members.get(groupId, id) !== notes) continue;
      context.members.set(groupId, id, {
        ...notes,
        tableIds: resolved,
        regexTableIds: notes.topicRegex === undefined ? undefined : regexIds,
      });
    }
  } catch {
    // The member's own heartbeat goes on; the others move with theirs.
  }
}

function ownedBuckets(
  context: HandlerContext,
  owned: NonNullable<KafkaHeartbeat['topicPartitions']>,
): { tableId: number; bucketId: number }[] {
  const buckets: { tableId: number; bucketId: number }[] = [];
  for (const { topicId, partitions } of owned) {
    const topic = context.catalog.byTopicId(topicId);
    if (topic === undefined) continue;
    for (const p of new Set(partitions))
      if (p >= 0 && p < topic.partitions) buckets.push({ tableId: topic.tableId, bucketId: p });
  }
  return buckets;
}

/** What a heartbeat saw of its member's subscription and client. */
interface Seen {
  topicNames: readonly string[] | undefined;
  topicRegex: string | undefined;
  regexTableIds: readonly number[] | undefined;
  tableIds: readonly number[] | undefined;
  clientId: string | null;
  /** The heartbeat's rack id: null leaves it as it was (Kafka sends it when it changes). */
  rackId: string | null;
  peer: Peer;
}

/** The notes on a member after a heartbeat that saw `seen`, `previous` being those before it. */
function notesOf(seen: Seen, previous: MemberNotes | undefined): MemberNotes {
  return {
    topicNames: seen.topicNames ?? previous?.topicNames,
    topicRegex: seen.topicRegex,
    regexTableIds: seen.topicRegex === undefined ? undefined : seen.regexTableIds,
    tableIds: seen.tableIds ?? previous?.tableIds,
    // The header's client id is not bounded as body strings are: 20,000 malformed bytes decode to
    // 60,000 of U+FFFD, more than a describe can write back. Cut as JoinGroup cuts it.
    clientId: cutWellFormed(seen.clientId ?? '', CLASSIC_NAME_LENGTH_MAX),
    clientHost: seen.peer.clientHost,
    rackId: seen.rackId ?? previous?.rackId ?? null,
  };
}

function remember(
  context: HandlerContext,
  groupId: string,
  response: HeartbeatResponse,
  seen: Seen,
): void {
  if (response.memberEpoch < 0) {
    context.members.delete(groupId, response.memberId);
    return;
  }
  const previous = context.members.get(groupId, response.memberId);
  context.members.set(groupId, response.memberId, notesOf(seen, previous));
}
