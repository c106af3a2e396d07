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
 */
import type { AclBinding, AclOperation, AclResourceType, AclSet } from './acl.js';

/** Settings of the authorizer. */
export interface AuthorizerSettings {
  /** Principals allowed everything (`User:admin`). */
  readonly superUsers: readonly string[];
  /** Allow an operation on a resource that has no ACL at all; default false. */
  readonly allowEveryoneIfNoAclFound: boolean;
}

const IMPLYING_DESCRIBE: ReadonlySet<AclOperation> = new Set(['Describe', 'Read', 'Delete', 'All']);

function patternMatches(acl: AclBinding, resourceType: AclResourceType, name: string): boolean {
  if (acl.resourceType !== resourceType) return false;
  if (acl.patternType === 'LITERAL') return acl.name === name || acl.name === '*';
  return name.startsWith(acl.name);
}

function operationMatches(acl: AclBinding, operation: AclOperation): boolean {
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

  constructor(settings: AuthorizerSettings, acls: AclSet) {
    this.#settings = settings;
    this.#superUsers = new Set(settings.superUsers);
    this.#acls = acls;
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
    operation: AclOperation,
    resourceType: AclResourceType,
    name: string,
  ): boolean {
    if (this.#superUsers.has(principal)) return true;
    let anyOnResource = false;
    let allowed = false;
    for (const acl of this.#acls.acls) {
      if (!patternMatches(acl, resourceType, name)) continue;
      anyOnResource = true;
      if (acl.principal !== principal && acl.principal !== 'User:*') continue;
      if (acl.host !== '*' && acl.host !== host) continue;
      if (!operationMatches(acl, operation)) continue;
      if (acl.permission === 'DENY') {
        if (acl.operation === operation || acl.operation === 'All') return false;
        continue;
      }
      allowed = true;
    }
    return anyOnResource ? allowed : this.#settings.allowEveryoneIfNoAclFound;
  }
}
