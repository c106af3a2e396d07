/**
 * The most groups one principal may create through the server (`groupsPerPrincipalMax`): a request
 * that would create a group (an OffsetCommit, JoinGroup, or ConsumerGroupHeartbeat joining with
 * epoch 0, for a group the store does not have) is refused with POLICY_VIOLATION (44) once the
 * principal has created that many, and nothing is written. Groups that exist already, whoever made
 * them, are not limited; super users are not limited.
 *
 * A group that is gone no longer counts: one deleted through this server's DeleteGroups at once,
 * one deleted otherwise (in process, by retention) when the principal reaches its limit, looked for
 * at most once every GONE_LOOK_INTERVAL_MS per principal (the look asks the store about each group
 * the principal has made, so a principal that keeps asking at its limit cannot make the server
 * look on every request).
 *
 * Invariants: a group is counted for a principal before the store is asked whether it exists (and
 * uncounted if it does), so requests in flight together cannot together pass the limit; a group is
 * never uncounted while a request of its principal for it is being checked or handled (it may not
 * exist yet only because that request has not written it); the counts live in memory and start
 * again with the server (the store does not record who made a group); at most 10,000 principals
 * are tracked, past which the oldest is forgotten.
 */
import { OffsetStoreError } from '../../errors/index.js';
import { KAFKA_ERROR, API_KEYS, type ApiKey } from '../protocol/index.js';
import type { HandlerContext, HandlerTable, Peer, RequestHandler } from '../handlers/index.js';
import type { ServerSecurity } from './server-security.js';

const PRINCIPALS_MAX = 10_000;
/** How often, at most, a principal's groups are looked for ones that are gone. */
const GONE_LOOK_INTERVAL_MS = 1_000;

/** Groups created per principal, since the server started. */
export class GroupLimits {
  readonly #max: number;
  readonly #created = new Map<string, Set<string>>();
  /** The existence checks in flight, by principal and group. */
  readonly #checking = new Map<string, Promise<boolean>>();
  /** Requests allowed and not yet answered, by principal and group. */
  readonly #inHandler = new Map<string, number>();
  /** When each principal's groups were last looked for ones that are gone. */
  readonly #lookedForGone = new Map<string, number>();
  #refused = 0;

  constructor(groupsPerPrincipalMax: number) {
    this.#max = groupsPerPrincipalMax;
  }

  /** Requests refused for going over the limit. */
  get refusedCount(): number {
    return this.#refused;
  }

  /**
   * Whether `principal` may write to `groupId`; counts the group when it is new. While the store is
   * asked about a group, later requests of the principal for it wait for that same answer, so
   * they reach their handler after the first one, in the order they came (pipelined commits of a
   * partition: the last one wins). A true answer counts the request as being handled until
   * `handled` is called with the same principal and group.
   */
  mayWrite(
    store: HandlerContext['store'],
    principal: string,
    groupId: string,
  ): boolean | Promise<boolean> {
    const key = keyOf(principal, groupId);
    const checking = this.#checking.get(key);
    if (checking !== undefined) return checking.then((allowed) => this.#handling(key, allowed));
    let created = this.#created.get(principal);
    if (created === undefined) {
      if (this.#created.size >= PRINCIPALS_MAX) {
        const oldest = this.#created.keys().next().value!;
        this.#created.delete(oldest);
        this.#lookedForGone.delete(oldest);
      }
      created = new Set();
      this.#created.set(principal, created);
    }
    if (created.has(groupId)) return this.#handling(key, true);
    const check = this.#decide(store, principal, created, groupId).then((allowed) => {
      this.#checking.delete(key);
      return this.#handling(key, allowed);
    });
    this.#checking.set(key, check);
    return check;
  }

  /** Ends what a true `mayWrite` began: the request for `groupId` has been answered. */
  handled(principal: string, groupId: string): void {
    const key = keyOf(principal, groupId);
    const count = this.#inHandler.get(key) ?? 0;
    if (count <= 1) this.#inHandler.delete(key);
    else this.#inHandler.set(key, count - 1);
  }

  /**
   * Uncounts a group that was deleted, for every principal that made it, except one with a request
   * for it being checked or handled: that request may write the group again (a group left counted
   * that is really gone is found at the principal's limit).
   */
  deleted(groupId: string): void {
    for (const [principal, created] of this.#created) {
      const key = keyOf(principal, groupId);
      if (!this.#checking.has(key) && !this.#inHandler.has(key)) created.delete(groupId);
    }
  }

  #handling(key: string, allowed: boolean): boolean {
    if (allowed) this.#inHandler.set(key, (this.#inHandler.get(key) ?? 0) + 1);
    return allowed;
  }

  async #decide(
    store: HandlerContext['store'],
    principal: string,
    created: Set<string>,
    groupId: string,
  ): Promise<boolean> {
    const reserved = created.size < this.#max;
    if (reserved) created.add(groupId);
    const exists = await groupExists(store, groupId);
    if (exists) {
      if (reserved) created.delete(groupId);
      return true;
    }
    if (reserved) return true;
    if ((await this.#forgetGone(store, principal, created)) && created.size < this.#max) {
      created.add(groupId);
      return true;
    }
    this.#refused++;
    return false;
  }

  /** Uncounts the groups of `principal` that no longer exist; whether it found any. */
  async #forgetGone(
    store: HandlerContext['store'],
    principal: string,
    created: Set<string>,
  ): Promise<boolean> {
    const now = performance.now();
    const lookedAt = this.#lookedForGone.get(principal);
    if (lookedAt !== undefined && now - lookedAt < GONE_LOOK_INTERVAL_MS) return false;
    this.#lookedForGone.set(principal, now);
    let found = false;
    for (const groupId of [...created]) {
      const key = keyOf(principal, groupId);
      if (this.#checking.has(key) || this.#inHandler.has(key)) continue;
      if (!(await groupExists(store, groupId)) && !this.#inHandler.has(key)) {
        found = created.delete(groupId) || found;
      }
    }
    return found;
  }
}

/** The key of a principal's requests for a group in the maps of requests checked and handled. */
function keyOf(principal: string, groupId: string): string {
  return `${principal}\u0000${groupId}`;
}

async function groupExists(store: HandlerContext['store'], groupId: string): Promise<boolean> {
  try {
    await store.describeGroup(groupId);
    return true;
  } catch (error) {
    if (error instanceof OffsetStoreError && error.code === 'GROUP_ID_NOT_FOUND') return false;
    return true; // any other failure: let the handler meet it and answer it
  }
}

/** The handlers with the group limit in front of the ones that create groups. */
export function groupLimitHandlers(
  inner: HandlerTable,
  security: ServerSecurity,
  limits: GroupLimits,
  superUsers: readonly string[],
): HandlerTable {
  const table: Record<number, unknown> = { ...inner };
  const guard = <K extends ApiKey>(
    key: K,
    groupOf: (request: Parameters<RequestHandler<K>>[1]) => string | null,
    refusal: (request: Parameters<RequestHandler<K>>[1]) => unknown,
  ) => {
    const handler = inner[key] as RequestHandler<K> | undefined;
    if (handler === undefined) return;
    table[key] = (async (
      context: HandlerContext,
      request: Parameters<RequestHandler<K>>[1],
      header: Parameters<RequestHandler<K>>[2],
      peer: Peer,
    ) => {
      const groupId = groupOf(request);
      const principal = peer.principal ?? 'User:ANONYMOUS';
      if (groupId === null || superUsers.includes(principal))
        return handler(context, request, header, peer);
      if (!(await limits.mayWrite(context.store, principal, groupId))) {
        security.audit({
          peer,
          api: apiName(key),
          outcome: 'denied',
          resource: `Group:${groupId}`,
          reason: 'groupsPerPrincipalMax reached',
        });
        return refusal(request);
      }
      try {
        return await handler(context, request, header, peer);
      } finally {
        limits.handled(principal, groupId);
      }
    }) as unknown as RequestHandler<K>;
  };
  guard(
    API_KEYS.OffsetCommit,
    (r) => r.groupId,
    (r) => ({
      throttleTimeMs: 0,
      topics: r.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => ({
          partitionIndex: p.partitionIndex,
          errorCode: KAFKA_ERROR.POLICY_VIOLATION,
        })),
      })),
    }),
  );
  guard(
    API_KEYS.JoinGroup,
    (r) => r.groupId,
    (r) => ({ errorCode: KAFKA_ERROR.POLICY_VIOLATION, memberId: r.memberId }),
  );
  guard(
    API_KEYS.ConsumerGroupHeartbeat,
    (r) => (r.memberEpoch === 0 ? r.groupId : null),
    () => ({
      throttleTimeMs: 0,
      errorCode: KAFKA_ERROR.POLICY_VIOLATION,
      errorMessage: 'this principal may create no more groups',
      memberEpoch: 0,
      heartbeatIntervalMs: 0,
    }),
  );
  const deleteGroups = inner[API_KEYS.DeleteGroups];
  if (deleteGroups !== undefined) {
    table[API_KEYS.DeleteGroups] = (async (...args: Parameters<typeof deleteGroups>) => {
      const response = await deleteGroups(...args);
      if (typeof response === 'object')
        for (const { groupId, errorCode } of response.results ?? [])
          if (errorCode === KAFKA_ERROR.NONE && groupId !== undefined) limits.deleted(groupId);
      return response;
    }) satisfies typeof deleteGroups;
  }
  return table as HandlerTable;
}

function apiName(apiKey: number): string {
  return Object.entries(API_KEYS).find(([, k]) => k === apiKey)?.[0] ?? String(apiKey);
}
