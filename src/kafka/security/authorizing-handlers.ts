/**
 * Puts the ACLs in front of the handlers: each API's wrapper asks the authorizer (authorizer.ts)
 * what Kafka's broker asks for that API, answers the refused parts itself with
 * GROUP_AUTHORIZATION_FAILED (30) or TOPIC_AUTHORIZATION_FAILED (29), and hands only the allowed
 * rest to the handler, so nothing refused is written, read or even looked up. Without an
 * authorizer (none configured), the handlers are called as they are.
 *
 * | API                        | checks (Kafka's)                          | refused                                   |
 * |----------------------------|-------------------------------------------|-------------------------------------------|
 * | OffsetCommit               | Group Read; Topic Read per topic          | every partition 30; the topic's 29        |
 * | OffsetFetch                | Group Describe; Topic Describe per topic  | group 30; the topic's partitions 29; all-topics fetch leaves them out |
 * | OffsetDelete               | Group Delete; Topic Read per topic        | 30; the topic's partitions 29             |
 * | DeleteGroups               | Group Delete per group                    | that group 30                             |
 * | DescribeGroups             | Group Describe per group                  | that group 30                             |
 * | ConsumerGroupDescribe      | Group Describe per group; Topic Describe of its members' topics | that group 30; 29 |
 * | ListGroups                 | Group Describe per listed group           | left out of the list                      |
 * | JoinGroup, SyncGroup, Heartbeat, LeaveGroup | Group Read               | 30                                        |
 * | FindCoordinator            | Group Describe per key                    | that key 30                               |
 * | ConsumerGroupHeartbeat     | Group Read; Topic Describe per subscribed | 30; 29; a regex's match left out         |
 * | Metadata                   | Topic Describe per topic                  | 29 (not created); all-topics leaves them out |
 * | ListOffsets                | Topic Describe per topic                  | the topic's partitions 29                 |
 * | Fetch                      | Topic Read per topic                      | the topic's partitions 29, answered at once |
 *
 * ListOffsets and Fetch tell only that a topic exists and how many partitions it has (this server
 * stores no records), but that is what Metadata hides from a principal that may not describe it.
 * Produce (never served: this server stores no records) needs Write on each topic, as in Kafka,
 * which only an ACL of All grants here: the topics refused are answered 29 for every partition, so
 * that a principal that may not describe a topic cannot learn from a produce's errors whether it
 * exists or how many partitions it has.
 * Every refusal of what a request names is audited (audit-log.ts), as are DeleteGroups and
 * OffsetDelete whatever the outcome; what is only left out of an answer (groups of a listing,
 * topics of an all-topics answer or matched by an expression) is not, as in Kafka.
 */
import {
  KAFKA_ERROR,
  API_KEYS,
  type ApiKey,
  type RequestHeader,
  type RequestOf,
} from '../protocol/index.js';
import {
  CLOSE_CONNECTION,
  OPERATIONS_NOT_ASKED,
  errorMessageOf,
  GROUP_OPERATIONS,
  operationsAllowed,
  TOPIC_OPERATIONS,
  fetchedTopic,
  type HandlerContext,
  type HandlerResult,
  type HandlerTable,
  type Peer,
  type RequestHandler,
} from '../handlers/index.js';
import type { AclResourceType, CheckedOperation } from './acl.js';
import type { ServerSecurity } from './server-security.js';

type Result<K extends ApiKey> = HandlerResult<K> | Promise<HandlerResult<K>>;

/** Applies `f` to a handler's answer, now or once it settles; CLOSE_CONNECTION passes through. */
function then<K extends ApiKey, R>(
  result: Result<K>,
  f: (body: Exclude<HandlerResult<K>, typeof CLOSE_CONNECTION>) => R,
): R | typeof CLOSE_CONNECTION | Promise<R | typeof CLOSE_CONNECTION> {
  if (result instanceof Promise)
    return result.then((r) => (r === CLOSE_CONNECTION ? CLOSE_CONNECTION : f(r as never)));
  return result === CLOSE_CONNECTION ? CLOSE_CONNECTION : f(result as never);
}

/**
 * The answers of `all` in request order: the handler's answers (`answered`, one per element of
 * `allowed`, in order) for the allowed ones, `refused(element)` for the others.
 */
function merged<T, A>(
  all: readonly T[],
  allowed: readonly T[],
  answered: readonly A[] | undefined,
  refused: (element: T, index: number) => A,
): A[] {
  const allowedSet = new Set(allowed);
  const count = answered?.length ?? 0;
  let next = 0;
  return all.map((element, i) =>
    allowedSet.has(element) && next < count ? answered![next++]! : refused(element, i),
  );
}

/** The first of `answers` for each key, by `keyOf`: an answer looked up in constant time. */
function firstByKey<A>(
  answers: readonly A[] | undefined,
  keyOf: (answer: A) => string | null | undefined,
) {
  const byKey = new Map<string | null | undefined, A>();
  for (const answer of answers ?? []) {
    const key = keyOf(answer);
    if (!byKey.has(key)) byKey.set(key, answer);
  }
  return byKey;
}

/** The ACL questions of one request. */
class Check {
  readonly #security: ServerSecurity;
  readonly #peer: Peer;
  readonly #api: string;

  constructor(security: ServerSecurity, peer: Peer, api: string) {
    this.#security = security;
    this.#peer = peer;
    this.#api = api;
  }

  /** Whether the peer may; a refusal is audited. */
  may(operation: CheckedOperation, resourceType: AclResourceType, name: string): boolean {
    const allowed = this.sees(operation, resourceType, name);
    if (!allowed)
      this.#security.audit({
        peer: this.#peer,
        api: this.#api,
        outcome: 'denied',
        resource: `${resourceType}:${name}`,
        operation,
        reason: 'no ACL allows it',
      });
    return allowed;
  }

  /**
   * Whether the peer may, without auditing a refusal: for what is left out of an answer unasked
   * (groups of a listing, topics of an all-topics answer or of a subscription's expression), which
   * Kafka does not log as a denial either. Audited, such omissions would fill the audit log's
   * refusals (one ListGroups over 1,000 groups) and hide the refusals of what was asked for.
   */
  sees(operation: CheckedOperation, resourceType: AclResourceType, name: string): boolean {
    const authorizer = this.#security.authorizer;
    if (authorizer === undefined) return true;
    const host = this.#peer.clientHost.startsWith('/')
      ? this.#peer.clientHost.slice(1)
      : this.#peer.clientHost;
    return authorizer.authorize(
      this.#peer.principal ?? 'User:ANONYMOUS',
      host,
      operation,
      resourceType,
      name,
    );
  }

  /** Records an administrative request. */
  admin(resource: string, outcome: 'allowed' | 'denied'): void {
    this.#security.audit({ peer: this.#peer, api: this.#api, outcome, resource });
  }
}

type Wrapper<K extends ApiKey> = (
  inner: RequestHandler<K>,
  check: Check,
  context: HandlerContext,
  request: RequestOf<K>,
  header: RequestHeader,
  peer: Peer,
) => Result<K>;

const WRAPPERS: { readonly [K in ApiKey]?: Wrapper<K> } = {
  [API_KEYS.Produce]: (inner, check, context, request, header, peer) => {
    // acks=0 expects no answer: the handler closes the connection, as for any produce.
    if (request.acks === 0) return inner(context, request, header, peer);
    const allowed = request.topicData.filter((t) => check.may('Write', 'Topic', t.name));
    const refused = (t: (typeof request.topicData)[number]) => ({
      name: t.name,
      partitionResponses: t.partitionData.map((p) => ({
        index: p.index,
        errorCode: KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED,
        baseOffset: -1n,
        errorMessage: null,
      })),
    });
    if (allowed.length === request.topicData.length) return inner(context, request, header, peer);
    if (allowed.length === 0)
      return { responses: request.topicData.map(refused), throttleTimeMs: 0 };
    return then(inner(context, { ...request, topicData: allowed }, header, peer), (body) => ({
      ...body,
      responses: merged(request.topicData, allowed, body.responses, refused),
    }));
  },

  [API_KEYS.OffsetCommit]: (inner, check, context, request, header, peer) => {
    const groupOk = check.may('Read', 'Group', request.groupId);
    const allowed = groupOk ? request.topics.filter((t) => check.may('Read', 'Topic', t.name)) : [];
    const allowedNames = new Set(allowed.map((t) => t.name));
    const refusedCode = (name: string) =>
      !groupOk
        ? KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED
        : allowedNames.has(name)
          ? null
          : KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED;
    const refused = request.topics.map((t) => {
      const errorCode = refusedCode(t.name) ?? 0;
      return {
        name: t.name,
        partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode })),
      };
    });
    if (allowed.length === 0) return { throttleTimeMs: 0, topics: refused };
    if (allowed.length === request.topics.length) return inner(context, request, header, peer);
    return then(inner(context, { ...request, topics: allowed }, header, peer), (body) => ({
      ...body,
      topics: merged(request.topics, allowed, body.topics, (_, i) => refused[i]!),
    }));
  },

  [API_KEYS.ListOffsets]: (inner, check, context, request, header, peer) => {
    const allowed = request.topics.filter((t) => check.may('Describe', 'Topic', t.name));
    if (allowed.length === request.topics.length) return inner(context, request, header, peer);
    const refused = (t: (typeof request.topics)[number]) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({
        partitionIndex: p.partitionIndex,
        errorCode: KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED,
        timestamp: -1n,
        offset: -1n,
      })),
    });
    return then(inner(context, { ...request, topics: allowed }, header, peer), (body) => ({
      ...body,
      topics: merged(request.topics, allowed, body.topics, refused),
    }));
  },

  [API_KEYS.Fetch]: (inner, check, context, request, header, peer) => {
    // By the topic the handler will answer for: a client may write its id where the name goes.
    const allowed = request.topics.filter((t) =>
      check.may('Read', 'Topic', fetchedTopic(context, t.topic)?.name ?? t.topic),
    );
    if (allowed.length === request.topics.length) return inner(context, request, header, peer);
    const refused = (t: (typeof request.topics)[number]) => ({
      topic: t.topic,
      partitions: t.partitions.map((p) => ({
        partitionIndex: p.partition,
        errorCode: KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED,
        highWatermark: -1n,
        lastStableOffset: -1n,
        logStartOffset: -1n,
        abortedTransactions: null,
        preferredReadReplica: -1,
        records: null,
      })),
    });
    // A refused partition is an error, answered at once: the allowed rest is not held either.
    return then(
      inner(context, { ...request, topics: allowed, maxWaitMs: 0 }, header, peer),
      (body) =>
        // A request-level error (an unknown fetch session) answers no topic.
        (body.errorCode ?? KAFKA_ERROR.NONE) !== KAFKA_ERROR.NONE
          ? body
          : { ...body, responses: merged(request.topics, allowed, body.responses, refused) },
    );
  },

  [API_KEYS.OffsetFetch]: (inner, check, context, request, header, peer) =>
    header.apiVersion < 8
      ? offsetFetchV7(inner, check, context, request, header, peer)
      : offsetFetchV8(inner, check, context, request, header, peer),

  [API_KEYS.OffsetDelete]: (inner, check, context, request, header, peer) => {
    if (!check.may('Delete', 'Group', request.groupId))
      return { errorCode: KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED, throttleTimeMs: 0, topics: [] };
    const allowed = request.topics.filter((t) => check.may('Read', 'Topic', t.name));
    check.admin(`Group:${request.groupId}`, 'allowed');
    const refused = (t: (typeof request.topics)[number]) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({
        partitionIndex: p.partitionIndex,
        errorCode: KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED,
      })),
    });
    if (allowed.length === request.topics.length) return inner(context, request, header, peer);
    if (allowed.length === 0)
      return {
        errorCode: KAFKA_ERROR.NONE,
        throttleTimeMs: 0,
        topics: request.topics.map(refused),
      };
    return then(inner(context, { ...request, topics: allowed }, header, peer), (body) =>
      // A group-level refusal (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP) answers no topic.
      body.errorCode !== KAFKA_ERROR.NONE
        ? body
        : { ...body, topics: merged(request.topics, allowed, body.topics, refused) },
    );
  },

  [API_KEYS.DeleteGroups]: (inner, check, context, request, header, peer) => {
    const allowed = request.groupsNames.filter((g) => check.may('Delete', 'Group', g));
    for (const g of allowed) check.admin(`Group:${g}`, 'allowed');
    const refused = (groupId: string) => ({
      groupId,
      errorCode: KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED,
    });
    if (allowed.length === 0)
      return { throttleTimeMs: 0, results: request.groupsNames.map(refused) };
    return then(inner(context, { ...request, groupsNames: allowed }, header, peer), (body) => {
      const byGroup = firstByKey(body.results, (r) => r.groupId);
      return { ...body, results: request.groupsNames.map((g) => byGroup.get(g) ?? refused(g)) };
    });
  },

  [API_KEYS.DescribeGroups]: (inner, check, context, request, header, peer) => {
    const allowed = request.groups.filter((g) => check.may('Describe', 'Group', g));
    const refused = (groupId: string) => ({
      errorCode: KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED,
      groupId,
      groupState: '',
      protocolType: '',
      protocolData: '',
      members: [],
    });
    if (allowed.length === 0) return { throttleTimeMs: 0, groups: request.groups.map(refused) };
    return then(inner(context, { ...request, groups: allowed }, header, peer), (body) => ({
      ...body,
      groups: merged(request.groups, allowed, body.groups, refused).map((group) =>
        withOperationsAllowed(check, 'Group', group.groupId, group),
      ),
    }));
  },

  [API_KEYS.ConsumerGroupDescribe]: (inner, check, context, request, header, peer) => {
    const allowed = request.groupIds.filter((g) => check.may('Describe', 'Group', g));
    const refused = (groupId: string) => ({
      errorCode: KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED,
      groupId,
      members: [],
    });
    if (allowed.length === 0) return { throttleTimeMs: 0, groups: request.groupIds.map(refused) };
    return then(inner(context, { ...request, groupIds: allowed }, header, peer), (body) => ({
      ...body,
      groups: merged(request.groupIds, allowed, body.groups, refused).map((group) =>
        usesHiddenTopics(check, group)
          ? {
              errorCode: KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED,
              errorMessage:
                'The described group uses topics that the client is not authorized to describe.',
              groupId: group.groupId,
              members: [],
            }
          : withOperationsAllowed(check, 'Group', group.groupId, group),
      ),
    }));
  },

  [API_KEYS.ListGroups]: (inner, check, context, request, header, peer) =>
    then(inner(context, request, header, peer), (body) => ({
      ...body,
      groups: (body.groups ?? []).filter((g) => check.sees('Describe', 'Group', g.groupId ?? '')),
    })),

  [API_KEYS.JoinGroup]: (inner, check, context, request, header, peer) =>
    check.may('Read', 'Group', request.groupId)
      ? inner(context, request, header, peer)
      : { errorCode: KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED, memberId: request.memberId },
  [API_KEYS.SyncGroup]: (inner, check, context, request, header, peer) =>
    check.may('Read', 'Group', request.groupId)
      ? inner(context, request, header, peer)
      : { errorCode: KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED },
  [API_KEYS.Heartbeat]: (inner, check, context, request, header, peer) =>
    check.may('Read', 'Group', request.groupId)
      ? inner(context, request, header, peer)
      : { errorCode: KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED },
  [API_KEYS.LeaveGroup]: (inner, check, context, request, header, peer) =>
    check.may('Read', 'Group', request.groupId)
      ? inner(context, request, header, peer)
      : { errorCode: KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED },

  [API_KEYS.FindCoordinator]: (inner, check, context, request, header, peer) => {
    const refused = {
      errorCode: KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED,
      errorMessage: 'not authorized to describe this group',
      nodeId: -1,
      host: '',
      port: -1,
    };
    if (header.apiVersion < 4)
      return request.keyType !== 0 || check.may('Describe', 'Group', request.key)
        ? inner(context, request, header, peer)
        : { throttleTimeMs: 0, ...refused };
    const allowed = request.coordinatorKeys.filter(
      (k) => request.keyType !== 0 || check.may('Describe', 'Group', k),
    );
    if (allowed.length === 0)
      return {
        throttleTimeMs: 0,
        coordinators: request.coordinatorKeys.map((key) => ({ key, ...refused })),
      };
    return then(inner(context, { ...request, coordinatorKeys: allowed }, header, peer), (body) => {
      const byKey = firstByKey(body.coordinators, (c) => c.key);
      return {
        ...body,
        coordinators: request.coordinatorKeys.map((key) => byKey.get(key) ?? { key, ...refused }),
      };
    });
  },

  [API_KEYS.ConsumerGroupHeartbeat]: (inner, check, context, request, header, peer) => {
    if (!check.may('Read', 'Group', request.groupId))
      return {
        throttleTimeMs: 0,
        errorCode: KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED,
        errorMessage: null,
        memberEpoch: 0,
        heartbeatIntervalMs: 0,
      };
    const denied = (request.subscribedTopicNames ?? []).filter(
      (t) => !check.may('Describe', 'Topic', t),
    );
    if (denied.length > 0)
      return {
        throttleTimeMs: 0,
        errorCode: KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED,
        errorMessage: errorMessageOf(`not authorized to describe topics ${denied.join(', ')}`),
        memberEpoch: 0,
        heartbeatIntervalMs: 0,
      };
    // The topics an expression matches are found by the handler: it keeps those the principal may
    // describe (as Kafka does), so an expression cannot reach a topic its names could not.
    return inner(context, request, header, describingTopics(peer, check));
  },

  [API_KEYS.Metadata]: (inner, check, context, request, header, peer) => {
    const all = request.topics === null || (header.apiVersion === 0 && request.topics.length === 0);
    if (all)
      return then(inner(context, request, header, peer), (body) => ({
        ...body,
        topics: (body.topics ?? [])
          .filter((t) => check.sees('Describe', 'Topic', t.name ?? ''))
          .map((t) => withTopicOperationsAllowed(check, t)),
      }));
    const named = (t: { name: string | null; topicId: string }) =>
      t.name ?? context.catalog.byTopicId(t.topicId)?.name ?? null;
    const allowed = request.topics!.filter(
      (t) => named(t) === null || check.may('Describe', 'Topic', named(t)!),
    );
    const refused = (t: { name: string | null; topicId: string }) => ({
      errorCode: KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED,
      name: t.name,
      topicId: t.topicId,
      isInternal: false,
      partitions: [],
    });
    if (allowed.length === request.topics!.length)
      return then(inner(context, request, header, peer), (body) => ({
        ...body,
        topics: (body.topics ?? []).map((t) => withTopicOperationsAllowed(check, t)),
      }));
    return then(inner(context, { ...request, topics: allowed }, header, peer), (body) => {
      const answered = body.topics ?? [];
      const allowedSet = new Set(allowed);
      const seen = new Set<string>();
      const topics = [];
      let next = 0;
      for (const t of request.topics!) {
        const key = t.name ?? `id:${t.topicId}`;
        if (seen.has(key)) continue;
        seen.add(key);
        topics.push(
          allowedSet.has(t) && next < answered.length
            ? withTopicOperationsAllowed(check, answered[next++]!)
            : refused(t),
        );
      }
      return { ...body, topics };
    });
  },
};

/**
 * The authorized operations of a described group or topic: those the peer may perform, where the
 * handler filled in every operation the ACLs govern (authorized-operations.ts); `filled` as it was
 * where the request did not ask for them, or answered with an error.
 */
function operationsOf(
  check: Check,
  resourceType: AclResourceType,
  name: string | null | undefined,
  filled: number | undefined,
): number | undefined {
  if (filled === undefined || filled === OPERATIONS_NOT_ASKED || name == null) return filled;
  const governed = resourceType === 'Topic' ? TOPIC_OPERATIONS : GROUP_OPERATIONS;
  return operationsAllowed(governed, (operation) => check.sees(operation, resourceType, name));
}

/** A described group with its authorized operations the peer's (operationsOf). */
function withOperationsAllowed<T extends { readonly authorizedOperations?: number }>(
  check: Check,
  resourceType: AclResourceType,
  name: string | null | undefined,
  described: T,
): T {
  const filled = described.authorizedOperations;
  const allowed = operationsOf(check, resourceType, name, filled);
  return allowed === filled ? described : { ...described, authorizedOperations: allowed };
}

type MetadataTopic = NonNullable<
  Exclude<HandlerResult<typeof API_KEYS.Metadata>, typeof CLOSE_CONNECTION>['topics']
>[number];

/** A Metadata topic with its authorized operations the peer's (operationsOf). */
function withTopicOperationsAllowed(check: Check, topic: MetadataTopic): MetadataTopic {
  const filled = topic.topicAuthorizedOperations;
  const allowed = operationsOf(check, 'Topic', topic.name, filled);
  return allowed === filled ? topic : { ...topic, topicAuthorizedOperations: allowed };
}

type FetchResponse = Exclude<HandlerResult<typeof API_KEYS.OffsetFetch>, typeof CLOSE_CONNECTION>;
type FetchedTopic = NonNullable<FetchResponse['topics']>[number];
type AskedTopic = { name: string; partitionIndexes: number[] };

function refusedFetchTopic(t: AskedTopic): FetchedTopic {
  return {
    name: t.name,
    partitions: t.partitionIndexes.map((p) => ({
      partitionIndex: p,
      committedOffset: -1n,
      metadata: '',
      errorCode: KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED,
    })),
  };
}

type DescribedConsumerGroup = NonNullable<
  Exclude<HandlerResult<typeof API_KEYS.ConsumerGroupDescribe>, typeof CLOSE_CONNECTION>['groups']
>[number];

/**
 * Whether a described consumer group's members subscribe to, own or are to own a topic the peer
 * may not describe: Kafka then answers the group TOPIC_AUTHORIZATION_FAILED rather than show it.
 */
function usesHiddenTopics(check: Check, group: DescribedConsumerGroup): boolean {
  const hidden = (name: string | undefined) =>
    name !== undefined && !check.sees('Describe', 'Topic', name);
  for (const member of group.members ?? []) {
    if ((member.subscribedTopicNames ?? []).some(hidden)) return true;
    for (const assignment of [member.assignment, member.targetAssignment])
      if ((assignment?.topicPartitions ?? []).some((t) => hidden(t.topicName))) return true;
  }
  return false;
}

/**
 * The peer, as the handler of a ConsumerGroupHeartbeat sees it: one that tells which of the topics
 * a subscription's expression matched the principal may describe (the others are left out).
 */
function describingTopics(peer: Peer, check: Check): Peer {
  const mayDescribeTopic = (name: string) => check.sees('Describe', 'Topic', name);
  return new Proxy(peer, {
    get(target, property) {
      if (property === 'mayDescribeTopic') return mayDescribeTopic;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** The topics of a fetch answer for `asked` (null: all), the unauthorized ones answered 29 or, for all, left out. */
function mergeFetchTopics(
  check: Check,
  asked: readonly AskedTopic[] | null,
  allowed: readonly AskedTopic[] | null,
  answered: readonly FetchedTopic[],
): FetchedTopic[] {
  if (asked === null || allowed === null)
    return answered.filter((t) => check.sees('Describe', 'Topic', t.name ?? ''));
  return merged(asked, allowed, answered, refusedFetchTopic);
}

/** OffsetFetch v1-7: one group, its topics checked one by one. */
function offsetFetchV7(
  inner: RequestHandler<typeof API_KEYS.OffsetFetch>,
  check: Check,
  context: HandlerContext,
  request: RequestOf<typeof API_KEYS.OffsetFetch>,
  header: RequestHeader,
  peer: Peer,
): Result<typeof API_KEYS.OffsetFetch> {
  if (!check.may('Describe', 'Group', request.groupId))
    return { throttleTimeMs: 0, errorCode: KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED, topics: [] };
  const asked = request.topics;
  const allowed =
    asked === null ? null : asked.filter((t) => check.may('Describe', 'Topic', t.name));
  if (asked !== null && allowed!.length === 0)
    return { throttleTimeMs: 0, errorCode: KAFKA_ERROR.NONE, topics: asked.map(refusedFetchTopic) };
  return then(inner(context, { ...request, topics: allowed }, header, peer), (body) =>
    // A group's error (v2+: top level, no topics) is the answer, as in Kafka.
    (body.errorCode ?? KAFKA_ERROR.NONE) !== KAFKA_ERROR.NONE
      ? body
      : { ...body, topics: mergeFetchTopics(check, asked, allowed, body.topics ?? []) },
  );
}

/** OffsetFetch v8+: several groups, each with its topics checked. */
function offsetFetchV8(
  inner: RequestHandler<typeof API_KEYS.OffsetFetch>,
  check: Check,
  context: HandlerContext,
  request: RequestOf<typeof API_KEYS.OffsetFetch>,
  header: RequestHeader,
  peer: Peer,
): Result<typeof API_KEYS.OffsetFetch> {
  const refusedGroup = (groupId: string) => ({
    groupId,
    topics: [],
    errorCode: KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED,
  });
  const groups = request.groups.filter((g) => check.may('Describe', 'Group', g.groupId));
  if (groups.length === 0)
    return { throttleTimeMs: 0, groups: request.groups.map((g) => refusedGroup(g.groupId)) };
  const allowedTopics = groups.map((g) =>
    g.topics === null ? null : g.topics.filter((t) => check.may('Describe', 'Topic', t.name)),
  );
  const filtered = {
    ...request,
    groups: groups.map((g, i) => ({ ...g, topics: allowedTopics[i]! })),
  };
  return then(inner(context, filtered, header, peer), (body) => {
    const answered = body.groups ?? [];
    // Keyed by the request's entry, not its group id: a request may name a group twice, each
    // time with other topics, and each entry has its own answer.
    const byEntry = new Map(
      groups.map((g, i) => [g, { allowed: allowedTopics[i]!, answer: answered[i] }]),
    );
    return {
      ...body,
      groups: request.groups.map((g) => {
        const found = byEntry.get(g);
        if (found?.answer === undefined) return refusedGroup(g.groupId);
        // A group's error (no topics) is that group's answer, as in Kafka.
        if ((found.answer.errorCode ?? KAFKA_ERROR.NONE) !== KAFKA_ERROR.NONE) return found.answer;
        return {
          ...found.answer,
          topics: mergeFetchTopics(
            check,
            g.topics,
            found.allowed,
            (found.answer.topics ?? []) as FetchedTopic[],
          ) as never,
        };
      }),
    };
  });
}

/**
 * The handlers with the ACL checks of the table above in front of them. Installed when an
 * authorizer or an audit log is configured; without an authorizer every check allows, and the
 * wrappers only audit the administrative requests.
 */
export function authorizingHandlers(inner: HandlerTable, security: ServerSecurity): HandlerTable {
  const table: Record<number, unknown> = { ...inner };
  for (const [key, wrapper] of Object.entries(WRAPPERS) as [string, Wrapper<ApiKey>][]) {
    const handler = inner[Number(key) as ApiKey] as RequestHandler<ApiKey> | undefined;
    if (handler === undefined) continue;
    const api = apiName(Number(key));
    table[Number(key)] = ((context, request, header, peer) => {
      if (security.authorizer === undefined && !security.auditing)
        return handler(context, request, header, peer);
      return wrapper(handler, new Check(security, peer, api), context, request, header, peer);
    }) as RequestHandler<ApiKey>;
  }
  return table as HandlerTable;
}

function apiName(apiKey: number): string {
  return Object.entries(API_KEYS).find(([, k]) => k === apiKey)?.[0] ?? String(apiKey);
}
