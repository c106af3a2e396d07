/**
 * src/cluster: cluster mode on etcd. Offsets-buckets are owned by nodes and their logs replicated
 * through etcd (EtcdLog, a LogPort); ownership is fenced by a coordinator epoch in an ownership key
 * attached to the owner's lease. This file is the folder's door.
 */
export { BucketKeys, ClusterKeys, DEFAULT_CLUSTER_PREFIX, prefixEnd } from './cluster-keys.js';
export {
  EtcdConnection,
  ETCD_CALL_TIMEOUT_MS,
  etcdError,
  outcomeUnknown,
  type EtcdConnectionOptions,
} from './etcd-connection.js';
export {
  ETCD_LOG_DEFAULTS,
  EtcdLog,
  type EtcdLogOptions,
  type EtcdLogRecovery,
} from './etcd-log.js';
export { claimBucket, currentOwner, releaseBucket } from './bucket-claim.js';
export { ownerToken, parseOwnerToken, type OwnerToken } from './owner-token.js';
export {
  CHECKPOINT_CHUNK_BYTES,
  readEtcdCheckpoint,
  writeEtcdCheckpoint,
  type CheckpointPointer,
  type LoadedEtcdCheckpoint,
} from './etcd-checkpoint.js';
export {
  ClusterNode,
  clusterStatus,
  type BucketStatus,
  type ClusterNodeOptions,
  type ClusterStatus,
  type ClusterTopicStatus,
  type NodeInfo,
} from './cluster-node.js';
export { LEASE_TTL_SECONDS_MAX, NodeLease, type NodeLeaseOptions } from './node-lease.js';
export { rendezvousOwner } from './rendezvous.js';
export { NodeClusterView } from './node-cluster-view.js';
export {
  startClusterServer,
  type ClusterServer,
  type ClusterServerOptions,
} from './cluster-server.js';
