/**
 * Decides whether a principal may perform an operation on a resource, as Kafka's StandardAuthorizer
 * does with the ACLs (acl.ts):
 * 1. a super user may do anything;
 * 2. the ACLs of the resource are those of its type whose pattern matches its name: LITERAL with
 *    the same name or `*`, PREFIXED with a prefix of it;
 * 3. with no ACL on the resource at all, the answer is `allowEveryoneIfNoAclFound` (default false);
 * 4. of those, the ones for the principal (or `User:*`) and the client's host (or `*`) count: any
 *    DENY of the operation (or All) refuses, whatever allows it (deny wins);
 * 5. else any ALLOW of the operation (or All) allows; an ALLOW of Read or Delete also allows
 *    Describe (Kafka: Describe is implied by Read, Write, Delete and Alter);
 * 6. else refused.
 *
 * The ACLs are indexed once per set, so that a check costs the ACLs of its resource, not all of them
 * (a request naming 40k groups against 10k ACLs took seconds): LITERAL ones by resource type and name
 * (`*` under its own name), PREFIXED ones by resource type and prefix, looked up for each prefix
 * length some ACL of the type has.
 */
import type { AclBinding, AclOperation, AclResourceType, AclSet, CheckedOperation } from './acl.js';

/** Settings of the authorizer. */
export interface AuthorizerSettings {
  /** Principals allowed everything (`User:admin`). */
  readonly superUsers: readonly string[];
  /** Allow an operation on a resource that has no ACL at all; default false. */
  readonly allowEveryoneIfNoAclFound: boolean;
}

const IMPLYING_DESCRIBE: ReadonlySet<AclOperation> = new Set(['Describe', 'Read', 'Delete', 'All']);

/** The ACLs of one resource type, by pattern. */
interface TypeIndex {
  /** LITERAL ACLs by name (the wildcard under `*`). */
  readonly literal: Map<string, AclBinding[]>;
  /** PREFIXED ACLs by prefix. */
  readonly prefixed: Map<string, AclBinding[]>;
  /** The lengths of the prefixes in `prefixed`, ascending. */
  readonly prefixLengths: number[];
}

function indexAcls(acls: readonly AclBinding[]): Map<AclResourceType, TypeIndex> {
  const index = new Map<AclResourceType, TypeIndex>();
  for (const acl of acls) {
    let forType = index.get(acl.resourceType);
    if (forType === undefined) {
      forType = { literal: new Map(), prefixed: new Map(), prefixLengths: [] };
      index.set(acl.resourceType, forType);
    }
    const byName = acl.patternType === 'LITERAL' ? forType.literal : forType.prefixed;
    const list = byName.get(acl.name);
    if (list === undefined) byName.set(acl.name, [acl]);
    else list.push(acl);
  }
  for (const forType of index.values()) {
    const lengths = new Set([...forType.prefixed.keys()].map((prefix) => prefix.length));
    forType.prefixLengths.push(...[...lengths].sort((a, b) => a - b));
  }
  return index;
}

function operationMatches(acl: AclBinding, operation: CheckedOperation): boolean {
  if (acl.operation === 'All' || acl.operation === operation) return true;
  return (
    operation === 'Describe' && acl.permission === 'ALLOW' && IMPLYING_DESCRIBE.has(acl.operation)
  );
}

/** ACL decisions over one set of ACLs. */
export class Authorizer {
  readonly #settings: AuthorizerSettings;
  readonly #superUsers: ReadonlySet<string>;
  readonly #acls: AclSet;
  readonly #index: Map<AclResourceType, TypeIndex>;

  constructor(settings: AuthorizerSettings, acls: AclSet) {
    this.#settings = settings;
    this.#superUsers = new Set(settings.superUsers);
    this.#acls = acls;
    this.#index = indexAcls(acls.acls);
  }

  /** The ACLs decided on. */
  get acls(): AclSet {
    return this.#acls;
  }

  /** The same settings over other ACLs (after a reload). */
  withAcls(acls: AclSet): Authorizer {
    return new Authorizer(this.#settings, acls);
  }

  /** Whether `principal` connecting from `host` may perform `operation` on the resource. */
  authorize(
    principal: string,
    host: string,
    operation: CheckedOperation,
    resourceType: AclResourceType,
    name: string,
  ): boolean {
    if (this.#superUsers.has(principal)) return true;
    const forType = this.#index.get(resourceType);
    const matching: AclBinding[][] = [];
    if (forType !== undefined) {
      const literal = forType.literal.get(name);
      if (literal !== undefined) matching.push(literal);
      const wildcard = name === '*' ? undefined : forType.literal.get('*');
      if (wildcard !== undefined) matching.push(wildcard);
      for (const length of forType.prefixLengths) {
        if (length > name.length) break;
        const prefixed = forType.prefixed.get(name.slice(0, length));
        if (prefixed !== undefined) matching.push(prefixed);
      }
    }
    let allowed = false;
    for (const acls of matching)
      for (const acl of acls) {
        if (acl.principal !== principal && acl.principal !== 'User:*') continue;
        if (acl.host !== '*' && acl.host !== host) continue;
        if (!operationMatches(acl, operation)) continue;
        if (acl.permission === 'DENY') {
          if (acl.operation === operation || acl.operation === 'All') return false;
          continue;
        }
        allowed = true;
      }
    return matching.length > 0 ? allowed : this.#settings.allowEveryoneIfNoAclFound;
  }
}
