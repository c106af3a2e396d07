/**
 * Authorized operations (KIP-430): what a described group or topic, or the cluster, lets the asking
 * principal do, sent when the request asks for it (DescribeGroups v3+, ConsumerGroupDescribe,
 * Metadata v8+) as a bit field of Kafka's ACL operation codes, bit n for code n; Kafka sends
 * Integer.MIN_VALUE when the request did not ask (and for what it refused). A Java admin client
 * turns the field into a set of operations, or null for MIN_VALUE.
 *
 * Kafka reports the operations its ACLs can grant on the resource's type, all of them without an
 * authorizer and those the principal's ACLs allow with one. This server's ACLs grant Read, Describe
 * and Delete on groups and topics, and nothing on the cluster (it serves no cluster operation), so
 * those are what it reports: the handlers give every one of them, as no authorizer decides there,
 * and the authorizing handlers keep those the principal may perform (`operationsAllowed`).
 */

/** The field's value when the request did not ask for it. */
export const OPERATIONS_NOT_ASKED = -2147483648;

/** Operations this server's ACLs govern on groups and topics, with Kafka's codes. */
export const GOVERNED_OPERATIONS = [
  ['Read', 3],
  ['Delete', 6],
  ['Describe', 8],
] as const;

/** A governed operation's name. */
export type GovernedOperation = (typeof GOVERNED_OPERATIONS)[number][0];

/** The bit field of the governed operations for which `allowed` says yes. */
export function operationsAllowed(allowed: (operation: GovernedOperation) => boolean): number {
  let bits = 0;
  for (const [operation, code] of GOVERNED_OPERATIONS) if (allowed(operation)) bits |= 1 << code;
  return bits;
}

/** Every governed operation: a group's or topic's field when no authorizer decides. */
export const ALL_GOVERNED_OPERATIONS = operationsAllowed(() => true);

/** The cluster's field when asked for: no operation on the cluster is this server's to grant. */
export const CLUSTER_OPERATIONS = 0;
