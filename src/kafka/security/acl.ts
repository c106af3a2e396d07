/**
 * Access control lists in Kafka's model, and their file `kafka-acls.json` in the store directory
 * (security-file.ts has the file's frame: written whole and atomically, checksummed).
 *
 * An ACL binds a principal (`User:alice`, `User:CN=host1,O=acme`, or `User:*`), a host (`*`), an
 * operation (Read, Describe, Delete, or All) and a permission (ALLOW or DENY) to a resource pattern:
 * a resource type (Group or Topic), a pattern type (LITERAL: the name itself, or `*` for every
 * resource of the type; PREFIXED: every name starting with it) and a name.
 *
 * | entry field  | values                                     |
 * |--------------|--------------------------------------------|
 * | principal    | `User:<name>` or `User:*`                  |
 * | host         | `*` or an IP address (canonical form: client-address.ts) |
 * | operation    | Read, Describe, Delete, All                |
 * | permission   | ALLOW, DENY                                |
 * | resourceType | Group, Topic                               |
 * | patternType  | LITERAL, PREFIXED                          |
 * | name         | non-empty; `*` only with LITERAL           |
 */
import * as path from 'node:path';
import type { FileSystem } from '../../io/index.js';
import { canonicalAddress } from './client-address.js';
import {
  corruptSecurityFile,
  readSecurityFile,
  underSecurityFilesLock,
  writeSecurityFile,
} from './security-file.js';

/** The ACL file's name in the store directory. */
export const ACLS_FILE = 'kafka-acls.json';
const KEY = 'acls';

/** Operations an ACL names. */
export type AclOperation = 'Read' | 'Describe' | 'Delete' | 'All';
/**
 * An operation a request needs: one an ACL names, or Write (Produce), which no ACL here names, so
 * that only an ACL of All grants it (or a super user, or allowEveryoneIfNoAclFound on a topic
 * without ACLs), as in Kafka.
 */
export type CheckedOperation = AclOperation | 'Write';
/** Every operation. */
export const ACL_OPERATIONS: readonly AclOperation[] = ['Read', 'Describe', 'Delete', 'All'];
/** ALLOW or DENY. */
export type AclPermission = 'ALLOW' | 'DENY';
/** The resource types served. */
export type AclResourceType = 'Group' | 'Topic';
/** How an ACL's name matches resources. */
export type AclPatternType = 'LITERAL' | 'PREFIXED';

/** One access control entry on a resource pattern. */
export interface AclBinding {
  readonly principal: string;
  readonly host: string;
  readonly operation: AclOperation;
  readonly permission: AclPermission;
  readonly resourceType: AclResourceType;
  readonly patternType: AclPatternType;
  readonly name: string;
}

/**
 * Why an ACL is malformed, or null. A new ACL's host must be `*` or an IP address; one read from the
 * file (`stored`) may be any non-empty text, as earlier versions accepted a host name: such an ACL
 * never matches a client (as before), and can be listed and removed.
 */
export function aclProblem(acl: AclBinding, stored = false): string | null {
  if (typeof acl.principal !== 'string' || !/^User:.+$/s.test(acl.principal))
    return `principal must be User:<name> or User:*, got ${JSON.stringify(acl.principal)}`;
  if (
    typeof acl.host !== 'string' ||
    acl.host === '' ||
    (!stored && acl.host !== '*' && canonicalAddress(acl.host) === undefined)
  )
    return `host must be * or an IP address (a client is matched by its address, never by a name), got ${JSON.stringify(acl.host)}`;
  if (!ACL_OPERATIONS.includes(acl.operation))
    return `operation must be one of ${ACL_OPERATIONS.join(', ')}, got ${JSON.stringify(acl.operation)}`;
  if (acl.permission !== 'ALLOW' && acl.permission !== 'DENY')
    return `permission must be ALLOW or DENY, got ${JSON.stringify(acl.permission)}`;
  if (acl.resourceType !== 'Group' && acl.resourceType !== 'Topic')
    return `resource type must be Group or Topic, got ${JSON.stringify(acl.resourceType)}`;
  if (acl.patternType !== 'LITERAL' && acl.patternType !== 'PREFIXED')
    return `pattern type must be LITERAL or PREFIXED, got ${JSON.stringify(acl.patternType)}`;
  if (typeof acl.name !== 'string' || acl.name === '') return 'resource name must not be empty';
  if (acl.patternType === 'PREFIXED' && acl.name === '*')
    return 'a PREFIXED pattern cannot be *; use LITERAL * for every resource';
  return null;
}

function same(a: AclBinding, b: AclBinding): boolean {
  return (
    a.principal === b.principal &&
    a.host === b.host &&
    a.operation === b.operation &&
    a.permission === b.permission &&
    a.resourceType === b.resourceType &&
    a.patternType === b.patternType &&
    a.name === b.name
  );
}

function normalized(acl: AclBinding): AclBinding {
  const { principal, operation, permission, resourceType, patternType, name } = acl;
  const host = acl.host === '*' ? '*' : (canonicalAddress(acl.host) ?? acl.host);
  return { principal, host, operation, permission, resourceType, patternType, name };
}

/** The ACLs of a server, read once; `acls` is immutable. */
export class AclSet {
  /** Every ACL, in the order they were added. */
  readonly acls: readonly AclBinding[];

  constructor(acls: readonly AclBinding[]) {
    this.acls = Object.freeze(acls.map(normalized));
  }

  /** Reads `kafka-acls.json` of the store in `dir` (none when it does not exist). CORRUPT_MESSAGE for a damaged file. */
  static async load(fs: FileSystem, dir: string): Promise<AclSet> {
    const filePath = path.join(dir, ACLS_FILE);
    const acls = (await readSecurityFile(fs, filePath, KEY)).map((entry) => {
      const acl = (typeof entry === 'object' && entry !== null ? entry : {}) as AclBinding;
      if (aclProblem(acl, true) !== null)
        throw corruptSecurityFile(
          filePath,
          `ACL ${JSON.stringify(entry)?.slice(0, 120)} is malformed: ${aclProblem(acl, true)}`,
        );
      return acl;
    });
    return new AclSet(acls);
  }

  /** Adds ACLs (those already present are kept once) and writes the file durably. */
  static async add(fs: FileSystem, dir: string, added: readonly AclBinding[]): Promise<AclSet> {
    for (const acl of added) {
      const problem = aclProblem(acl);
      if (problem !== null) throw new RangeError(problem);
    }
    return underSecurityFilesLock(fs, dir, async () => {
      const current = await AclSet.load(fs, dir);
      const acls = [...current.acls];
      for (const acl of added.map(normalized)) if (!acls.some((a) => same(a, acl))) acls.push(acl);
      await writeSecurityFile(fs, path.join(dir, ACLS_FILE), KEY, acls);
      return new AclSet(acls);
    });
  }

  /** Removes the ACLs equal to any of `removed`, writes the file durably; `count` is how many went. */
  static async remove(
    fs: FileSystem,
    dir: string,
    removed: readonly AclBinding[],
  ): Promise<{ acls: AclSet; count: number }> {
    return underSecurityFilesLock(fs, dir, async () => {
      const current = await AclSet.load(fs, dir);
      const gone = removed.filter((r) => aclProblem(r, true) === null).map(normalized);
      const acls = current.acls.filter((a) => !gone.some((r) => same(a, r)));
      const count = current.acls.length - acls.length;
      if (count > 0) await writeSecurityFile(fs, path.join(dir, ACLS_FILE), KEY, acls);
      return { acls: new AclSet(acls), count };
    });
  }
}
