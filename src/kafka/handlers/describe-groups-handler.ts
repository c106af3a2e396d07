/**
 * DescribeGroups (key 15, v0-5): each group's state and members, from `store.describeGroup`.
 *
 * - A classic group as Kafka's coordinator describes it: its state (Empty, PreparingRebalance,
 *   CompletingRebalance, Stable), its members' protocol type, and each member's id, instance id,
 *   client id and host; the selected protocol and each member's metadata and assignment bytes only
 *   while Stable (Kafka sends neither during a rebalance).
 * - A consumer-protocol group: protocol type 'consumer', protocol data the assignor the group uses
 *   (empty without members), states as the store names them (Empty, Assigning, Reconciling,
 *   Stable); each member carries its subscription and assignment in the consumer protocol's
 *   embedded format (consumer-protocol.ts), topics by name, and the client id and host of its last
 *   heartbeat when the server remembers them.
 * - A group with committed offsets only: Empty, protocol type ''.
 *
 * A group the store does not know is state Dead with no error, as Kafka answers; an invalid group
 * id is INVALID_GROUP_ID, an offsets-bucket still loading COORDINATOR_LOAD_IN_PROGRESS.
 */
import { OffsetStoreError } from '../../errors/index.js';
import type { ClassicGroupDescription } from '../../group/index.js';
import { KAFKA_ERROR, type API_KEYS, type ResponseInputOf } from '../protocol/index.js';
import { ALL_GROUP_OPERATIONS, OPERATIONS_NOT_ASKED } from './authorized-operations.js';
import { encodeAssignment, encodeSubscription } from './consumer-protocol.js';
import type { HandlerContext } from './handler-context.js';
import type { RequestHandler } from './request-handler.js';
import { bucketsByTopic, topicNamesOf } from './topic-mapping.js';
import { mapAsyncInTurns } from './in-turns.js';

type DescribeResponse = ResponseInputOf<typeof API_KEYS.DescribeGroups>;
type DescribedGroup = NonNullable<DescribeResponse['groups']>[number];

const NO_BYTES = Buffer.alloc(0);

function emptyGroup(
  groupId: string,
  groupState: string,
  errorCode: number,
  operations = OPERATIONS_NOT_ASKED,
): DescribedGroup {
  return {
    errorCode,
    groupId,
    groupState,
    protocolType: '',
    protocolData: '',
    members: [],
    authorizedOperations: operations,
  };
}

/** `operations`: the group's authorized operations when described, or OPERATIONS_NOT_ASKED. */
async function describeOne(
  context: HandlerContext,
  groupId: string,
  operations: number,
): Promise<DescribedGroup> {
  const { catalog, members } = context;
  let description;
  try {
    description = await context.store.describeGroup(groupId);
  } catch (error) {
    if (error instanceof OffsetStoreError && error.code === 'GROUP_ID_NOT_FOUND')
      return emptyGroup(groupId, 'Dead', KAFKA_ERROR.NONE, operations);
    return emptyGroup(groupId, 'Dead', context.errorCodeOf(error, 'DescribeGroups'));
  }
  if (description.classic !== null)
    return describeClassic(groupId, description.classic, operations);
  return {
    errorCode: KAFKA_ERROR.NONE,
    groupId,
    groupState: description.state,
    protocolType: description.protocolType,
    protocolData: description.members.length === 0 ? '' : (description.assignor ?? ''),
    members: description.members.map((m) => {
      const notes = members.get(groupId, m.memberId);
      return {
        memberId: m.memberId,
        groupInstanceId: m.instanceId,
        clientId: notes?.clientId ?? '',
        clientHost: notes?.clientHost ?? '',
        memberMetadata: encodeSubscription(
          notes?.topicNames ?? topicNamesOf(catalog, m.subscribedTableIds),
        ),
        memberAssignment: encodeAssignment(
          bucketsByTopic(catalog, m.assignment).map((t) => ({
            topic: t.topic.name,
            partitions: t.partitions,
          })),
        ),
      };
    }),
    authorizedOperations: operations,
  };
}

function describeClassic(
  groupId: string,
  group: ClassicGroupDescription,
  operations: number,
): DescribedGroup {
  const stable = group.state === 'Stable';
  return {
    errorCode: KAFKA_ERROR.NONE,
    groupId,
    groupState: group.state,
    protocolType: group.protocolType ?? '',
    protocolData: stable ? (group.protocolName ?? '') : '',
    members: group.members.map((m) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      clientId: m.clientId,
      clientHost: m.clientHost,
      memberMetadata: stable ? m.metadata : NO_BYTES,
      memberAssignment: stable ? m.assignment : NO_BYTES,
    })),
    authorizedOperations: operations,
  };
}

/** Describes each group asked for. */
export const handleDescribeGroups: RequestHandler<typeof API_KEYS.DescribeGroups> = async (
  context,
  request,
) => ({
  throttleTimeMs: 0,
  groups: await mapAsyncInTurns(request.groups, (groupId) =>
    describeOne(
      context,
      groupId,
      request.includeAuthorizedOperations ? ALL_GROUP_OPERATIONS : OPERATIONS_NOT_ASKED,
    ),
  ),
});
