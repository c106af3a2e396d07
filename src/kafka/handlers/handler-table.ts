/**
 * Which handler answers which API. Every advertised API has one (a request for one that is not
 * advertised never reaches a handler: the server closes the connection, as Kafka does).
 */
import { API_KEYS } from '../protocol/index.js';
import { handleApiVersions } from './api-versions-handler.js';
import { handleConsumerGroupDescribe } from './consumer-group-describe-handler.js';
import { handleConsumerGroupHeartbeat } from './consumer-group-heartbeat-handler.js';
import { handleDeleteGroups } from './delete-groups-handler.js';
import { handleDescribeGroups } from './describe-groups-handler.js';
import { handleFetch } from './fetch-handler.js';
import { handleFindCoordinator } from './find-coordinator-handler.js';
import { handleHeartbeat } from './heartbeat-handler.js';
import { handleJoinGroup } from './join-group-handler.js';
import { handleLeaveGroup } from './leave-group-handler.js';
import { handleListGroups } from './list-groups-handler.js';
import { handleListOffsets } from './list-offsets-handler.js';
import { handleMetadata } from './metadata-handler.js';
import { handleOffsetCommit } from './offset-commit-handler.js';
import { handleOffsetDelete } from './offset-delete-handler.js';
import { handleOffsetFetch } from './offset-fetch-handler.js';
import { handleProduce } from './produce-handler.js';
import { handleSyncGroup } from './sync-group-handler.js';
import type { HandlerTable } from './request-handler.js';

/** The handler of every API the server answers. */
export const HANDLERS: HandlerTable = {
  [API_KEYS.Produce]: handleProduce,
  [API_KEYS.Fetch]: handleFetch,
  [API_KEYS.ListOffsets]: handleListOffsets,
  [API_KEYS.Metadata]: handleMetadata,
  [API_KEYS.OffsetCommit]: handleOffsetCommit,
  [API_KEYS.OffsetFetch]: handleOffsetFetch,
  [API_KEYS.FindCoordinator]: handleFindCoordinator,
  [API_KEYS.JoinGroup]: handleJoinGroup,
  [API_KEYS.Heartbeat]: handleHeartbeat,
  [API_KEYS.LeaveGroup]: handleLeaveGroup,
  [API_KEYS.SyncGroup]: handleSyncGroup,
  [API_KEYS.DescribeGroups]: handleDescribeGroups,
  [API_KEYS.ListGroups]: handleListGroups,
  [API_KEYS.ApiVersions]: handleApiVersions,
  [API_KEYS.DeleteGroups]: handleDeleteGroups,
  [API_KEYS.OffsetDelete]: handleOffsetDelete,
  [API_KEYS.ConsumerGroupHeartbeat]: handleConsumerGroupHeartbeat,
  [API_KEYS.ConsumerGroupDescribe]: handleConsumerGroupDescribe,
};
