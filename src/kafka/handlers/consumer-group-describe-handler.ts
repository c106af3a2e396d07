/**
 * ConsumerGroupDescribe (key 69, v0): a consumer group as KIP-848 describes it, from
 * `store.describeGroup`: state, group and assignment epochs, assignor, and per member its epoch,
 * instance id, subscribed topic names, current and target assignments (topic id, name and
 * partitions), and the client id, host and rack of its last heartbeats when the server remembers them
 * (in memory: after a restart, until the member sends them again).
 * A group the store does not know is GROUP_ID_NOT_FOUND; an invalid id INVALID_GROUP_ID. So is a
 * classic group (or one that has only committed offsets), as in Kafka: "not a consumer group",
 * which is what tells Kafka's admin client to describe it with DescribeGroups instead.
 */
import { OffsetStoreError } from '../../errors/index.js';
import type { TableBucket } from '../../model/index.js';
import { KAFKA_ERROR, type API_KEYS } from '../protocol/index.js';
import type { HandlerContext } from './handler-context.js';
import { errorMessageOf } from './kafka-error-code.js';
import type { RequestHandler } from './request-handler.js';
import { bucketsByTopic, topicNamesOf } from './topic-mapping.js';
import { mapAsyncInTurns } from './in-turns.js';
import { ALL_GROUP_OPERATIONS, OPERATIONS_NOT_ASKED } from './authorized-operations.js';

function assignmentOf(context: HandlerContext, buckets: readonly TableBucket[]) {
  return {
    topicPartitions: bucketsByTopic(context.catalog, buckets).map((t) => ({
      topicId: t.topic.topicId,
      topicName: t.topic.name,
      partitions: t.partitions,
    })),
  };
}

/** `operations`: the group's authorized operations when described, or OPERATIONS_NOT_ASKED. */
async function describeOne(context: HandlerContext, groupId: string, operations: number) {
  try {
    const d = await context.store.describeGroup(groupId);
    if (d.groupType !== 'consumer')
      throw new OffsetStoreError('GROUP_ID_NOT_FOUND', `Group ${groupId} is not a consumer group.`);
    return {
      errorCode: KAFKA_ERROR.NONE,
      errorMessage: null,
      groupId,
      groupState: d.state,
      groupEpoch: d.groupEpoch,
      assignmentEpoch: d.assignmentEpoch,
      assignorName: d.assignor ?? '',
      members: d.members.map((m) => {
        const notes = context.members.get(groupId, m.memberId);
        return {
          memberId: m.memberId,
          instanceId: m.instanceId,
          rackId: notes?.rackId ?? null,
          memberEpoch: m.memberEpoch,
          clientId: notes?.clientId ?? '',
          clientHost: notes?.clientHost ?? '',
          // A member's own names (none beside an expression), as Kafka reports them; the topics
          // of its tables when its names are not known (since a restart).
          subscribedTopicNames:
            notes?.topicNames ??
            (notes?.topicRegex !== undefined
              ? []
              : topicNamesOf(context.catalog, m.subscribedTableIds)),
          subscribedTopicRegex: notes?.topicRegex ?? null,
          assignment: assignmentOf(context, m.assignment),
          targetAssignment: assignmentOf(context, m.targetAssignment),
        };
      }),
      authorizedOperations: operations,
    };
  } catch (error) {
    return {
      errorCode: context.errorCodeOf(error, 'ConsumerGroupDescribe'),
      errorMessage: errorMessageOf((error as Error).message),
      groupId,
      groupState: 'Dead',
      members: [],
    };
  }
}

/** Describes each consumer group asked for. */
export const handleConsumerGroupDescribe: RequestHandler<
  typeof API_KEYS.ConsumerGroupDescribe
> = async (context, request) => ({
  throttleTimeMs: 0,
  groups: await mapAsyncInTurns(request.groupIds, (groupId) =>
    describeOne(
      context,
      groupId,
      request.includeAuthorizedOperations ? ALL_GROUP_OPERATIONS : OPERATIONS_NOT_ASKED,
    ),
  ),
});
