/**
 * The most groups one principal may create through the server (`groupsPerPrincipalMax`): a request
 * that would create a group (an OffsetCommit, JoinGroup, or ConsumerGroupHeartbeat joining with
 * epoch 0, for a group the store does not have) is refused with POLICY_VIOLATION (44) once the
 * principal has created that many, and nothing is written. Groups that exist already, whoever made
 * them, are not limited; super users are not limited.
 *
 * Invariants: a group is counted for a principal before the store is asked whether it exists (and
 * uncounted if it does), so requests in flight together cannot together pass the limit; the counts
 * live in memory and start again with the server (the store does not record who made a group); at
 * most 10,000 principals are tracked, past which the oldest is forgotten.
 */
import { OffsetStoreError } from '../../errors/index.js';
import { KAFKA_ERROR, API_KEYS, type ApiKey } from '../protocol/index.js';
import type { HandlerContext, HandlerTable, Peer, RequestHandler } from '../handlers/index.js';
import type { ServerSecurity } from './server-security.js';

const PRINCIPALS_MAX = 10_000;

/** Groups created per principal, since the server started. */
export class GroupLimits {
  readonly #max: number;
  readonly #created = new Map<string, Set<string>>();
  /** The existence checks in flight, by principal and group. */
  readonly #checking = new Map<string, Promise<boolean>>();
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
   * partition: the last one wins).
   */
  mayWrite(
    store: HandlerContext['store'],
    principal: string,
    groupId: string,
  ): boolean | Promise<boolean> {
    const key = `${principal}\u0000${groupId}`;
    const checking = this.#checking.get(key);
    if (checking !== undefined) return checking;
    let created = this.#created.get(principal);
    if (created === undefined) {
      if (this.#created.size >= PRINCIPALS_MAX)
        this.#created.delete(this.#created.keys().next().value!);
      created = new Set();
      this.#created.set(principal, created);
    }
    if (created.has(groupId)) return true;
    const reserved = created.size < this.#max;
    if (reserved) created.add(groupId);
    const check = groupExists(store, groupId).then((exists) => {
      this.#checking.delete(key);
      if (exists && reserved) created.delete(groupId);
      if (!exists && !reserved) this.#refused++;
      return exists || reserved;
    });
    this.#checking.set(key, check);
    return check;
  }
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
      if (
        groupId !== null &&
        !superUsers.includes(principal) &&
        !(await limits.mayWrite(context.store, principal, groupId))
      ) {
        security.audit({
          peer,
          api: apiName(key),
          outcome: 'denied',
          resource: `Group:${groupId}`,
          reason: 'groupsPerPrincipalMax reached',
        });
        return refusal(request);
      }
      return handler(context, request, header, peer);
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
  return table as HandlerTable;
}

function apiName(apiKey: number): string {
  return Object.entries(API_KEYS).find(([, k]) => k === apiKey)?.[0] ?? String(apiKey);
}
