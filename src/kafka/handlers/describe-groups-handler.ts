/**
 * DescribeGroups (key 15, v0-5): each group's state and members, from `store.describeGroup`.
 * Every group of this store is a consumer group: protocol type 'consumer', protocol data the
 * assignor the group uses (empty without members), states as the store names them (Empty,
 * Assigning, Reconciling, Stable). Each member carries its subscription and assignment in the
 * consumer protocol's embedded format (consumer-protocol.ts), topics by name, and the client id
 * and host of its last heartbeat when the server remembers them. A group the store does not know
 * is state Dead with no error, as Kafka answers; an invalid group id is INVALID_GROUP_ID, an
 * offsets-bucket still loading COORDINATOR_LOAD_IN_PROGRESS.
 */
import { OffsetStoreError } from '../../errors/index.js';
import { KAFKA_ERROR, type API_KEYS, type ResponseInputOf } from '../protocol/index.js';
import { encodeAssignment, encodeSubscription } from './consumer-protocol.js';
import type { HandlerContext } from './handler-context.js';
import type { RequestHandler } from './request-handler.js';
import { bucketsByTopic, topicNamesOf } from './topic-mapping.js';

type DescribeResponse = ResponseInputOf<typeof API_KEYS.DescribeGroups>;
type DescribedGroup = NonNullable<DescribeResponse['groups']>[number];

const NO_AUTHORIZED_OPERATIONS = -2147483648;

function emptyGroup(groupId: string, groupState: string, errorCode: number): DescribedGroup {
  return { errorCode, groupId, groupState, protocolType: '', protocolData: '', members: [], authorizedOperations: NO_AUTHORIZED_OPERATIONS };
}

async function describeOne(context: HandlerContext, groupId: string): Promise<DescribedGroup> {
  const { catalog, members } = context;
  let description;
  try {
    description = await context.store.describeGroup(groupId);
  } catch (error) {
    if (error instanceof OffsetStoreError && error.code === 'GROUP_ID_NOT_FOUND') return emptyGroup(groupId, 'Dead', KAFKA_ERROR.NONE);
    return emptyGroup(groupId, 'Dead', context.errorCodeOf(error, 'DescribeGroups'));
  }
  return {
    errorCode: KAFKA_ERROR.NONE,
    groupId,
    groupState: description.state,
    protocolType: 'consumer',
    protocolData: description.members.length === 0 ? '' : (description.assignor ?? ''),
    members: description.members.map((m) => {
      const notes = members.get(groupId, m.memberId);
      return {
        memberId: m.memberId,
        groupInstanceId: m.instanceId,
        clientId: notes?.clientId ?? '',
        clientHost: notes?.clientHost ?? '',
        memberMetadata: encodeSubscription(notes?.topicNames ?? topicNamesOf(catalog, m.subscribedTableIds)),
        memberAssignment: encodeAssignment(bucketsByTopic(catalog, m.assignment).map((t) => ({ topic: t.topic.name, partitions: t.partitions }))),
      };
    }),
    authorizedOperations: NO_AUTHORIZED_OPERATIONS,
  };
}

/** Describes each group asked for. */
export const handleDescribeGroups: RequestHandler<typeof API_KEYS.DescribeGroups> = async (context, request) => ({
  throttleTimeMs: 0,
  groups: await Promise.all(request.groups.map((groupId) => describeOne(context, groupId))),
});
