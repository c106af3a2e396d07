/**
 * Authorized operations (KIP-430): what a described group or topic, or the cluster, lets the asking
 * principal do, sent when the request asks for it (DescribeGroups v3+, ConsumerGroupDescribe,
 * Metadata v8+) as a bit field of Kafka's ACL operation codes, bit n for code n; Kafka sends
 * Integer.MIN_VALUE when the request did not ask (and for what it refused). A Java admin client
 * turns the field into a set of operations, or null for MIN_VALUE.
 *
 * Kafka reports the operations its ACLs can grant on the resource's type, all of them without an
 * authorizer and those the principal's ACLs allow with one. This server checks Read, Describe and
 * Delete on groups; the same on topics, and Write (a produce's, which only an ACL of All grants);
 * nothing on the cluster (it serves no cluster operation). Those are what it reports: the handlers
 * give every one of them, as no authorizer decides there, and the authorizing handlers keep those
 * the principal may perform (`operationsAllowed`).
 */

/** The field's value when the request did not ask for it. */
export const OPERATIONS_NOT_ASKED = -2147483648;

/** Operations this server checks on groups, with Kafka's codes. */
export const GROUP_OPERATIONS = [
  ['Read', 3],
  ['Delete', 6],
  ['Describe', 8],
] as const;

/** Operations this server checks on topics: a group's, and a produce's Write. */
export const TOPIC_OPERATIONS = [...GROUP_OPERATIONS, ['Write', 4]] as const;

/** A checked operation's name. */
export type GovernedOperation = (typeof TOPIC_OPERATIONS)[number][0];

/** The bit field of the operations of `governed` for which `allowed` says yes. */
export function operationsAllowed(
  governed: typeof GROUP_OPERATIONS | typeof TOPIC_OPERATIONS,
  allowed: (operation: GovernedOperation) => boolean,
): number {
  let bits = 0;
  for (const [operation, code] of governed) if (allowed(operation)) bits |= 1 << code;
  return bits;
}

/** Every group operation: a group's field when no authorizer decides. */
export const ALL_GROUP_OPERATIONS = operationsAllowed(GROUP_OPERATIONS, () => true);

/** Every topic operation: a topic's field when no authorizer decides. */
export const ALL_TOPIC_OPERATIONS = operationsAllowed(TOPIC_OPERATIONS, () => true);

/** The cluster's field when asked for: no operation on the cluster is this server's to grant. */
export const CLUSTER_OPERATIONS = 0;
