/**
 * startClusterServer: one node of a cluster as a Kafka server, the composition `offset-store serve
 * --etcd` runs. A hosting OffsetStore in `dir` (it keeps the lock, the manifest and the Kafka topic
 * catalog there; no offsets), a Kafka server whose Metadata and FindCoordinator answer from the
 * cluster, and a ClusterNode that publishes the server's advertised address and hosts the buckets
 * it comes to own.
 *
 * Topics: the server's catalog is made a copy of the cluster's catalog in etcd at start, with this
 * node's `topics` added to it (cluster-topics.ts), and takes what other nodes add later from a look
 * at it every second.
 *
 * Order: the server binds first (its advertised address is what the node publishes), then the node
 * joins. Closing goes the other way: the node gives its buckets up (so successors need not wait for
 * its lease), then the server closes with the store.
 */
import { startKafkaServer, type KafkaServer, type KafkaServerOptions } from '../kafka/index.js';
import { OffsetStore } from '../store.js';
import { ClusterKeys } from './cluster-keys.js';
import { ClusterNode, checkNodeOptions, configuredBucketCount } from './cluster-node.js';
import { ClusterTopicsWatch, joinClusterTopics } from './cluster-topics.js';
import { EtcdConnection } from './etcd-connection.js';
import { NodeClusterView } from './node-cluster-view.js';
import { warningsTo } from '../store-options.js';

/** How often a node looks at the cluster's topic catalog for what other nodes added. */
const TOPICS_LOOK_INTERVAL_MS = 1000;

/** Options of a cluster node's server. */
export interface ClusterServerOptions extends Omit<
  KafkaServerOptions,
  'store' | 'clusterView' | 'nodeId' | 'topicAuthority'
> {
  /** The node's local directory (lock, manifest, topic catalog). */
  dir: string;
  /** etcd client URLs. */
  etcdEndpoints: readonly string[];
  /** The node's id in the cluster. */
  nodeId: string;
  /** Its Kafka broker id; unique in the cluster. */
  brokerId: number;
  /** Offsets-buckets of the cluster (fixed when the cluster is created); default 16. */
  bucketCount?: number;
  /** Key prefix of the cluster in etcd. */
  prefix?: string;
  /** Lease TTL, seconds; default 3. */
  leaseTtlSeconds?: number;
  /** Reconcile interval, ms; default 250. */
  reconcileIntervalMs?: number;
  /** Deadline of every etcd call, ms; default 2000. */
  callTimeoutMs?: number;
  /** The hosting store's offsetsRetentionMs (OffsetStore.open); default 7 days. */
  offsetsRetentionMs?: number;
  /** The hosting store's offsetsRetentionCheckIntervalMs; default 60,000. */
  offsetsRetentionCheckIntervalMs?: number;
  /**
   * Default false here: a topic a client's request creates goes into the cluster's catalog in etcd,
   * which is one value that etcd keeps a version of per change until it is compacted, so a client
   * creating topic after topic could fill etcd's quota (docs/cluster.md, "Topics"). Turn it on where
   * clients are trusted (or authorized to create topics).
   */
  autoCreateTopics?: boolean;
}

/** A running cluster node with its Kafka server. */
export interface ClusterServer {
  /** The Kafka server. */
  readonly server: KafkaServer;
  /** The cluster node. */
  readonly node: ClusterNode;
  /** The hosting store. */
  readonly store: OffsetStore;
  /** Leaves the cluster (buckets released), then closes the server and the store. */
  close(): Promise<void>;
}

/** Starts a node of a cluster with its Kafka server. */
export async function startClusterServer(options: ClusterServerOptions): Promise<ClusterServer> {
  const {
    dir,
    etcdEndpoints,
    nodeId,
    brokerId,
    bucketCount,
    prefix,
    leaseTtlSeconds,
    reconcileIntervalMs,
    callTimeoutMs,
    offsetsRetentionMs,
    offsetsRetentionCheckIntervalMs,
    ...serverOptions
  } = options;
  checkNodeOptions(options);
  const existing = await clusterBucketCount(etcdEndpoints, prefix, callTimeoutMs);
  const store = await OffsetStore.openHosted({
    dir,
    bucketCount: bucketCount ?? existing ?? 16,
    ...(options.onWarning === undefined ? {} : { onWarning: options.onWarning }),
    ...(offsetsRetentionMs === undefined ? {} : { offsetsRetentionMs }),
    ...(offsetsRetentionCheckIntervalMs === undefined ? {} : { offsetsRetentionCheckIntervalMs }),
  });
  const onWarning = warningsTo(options.onWarning);
  const keys = new ClusterKeys(prefix);
  const topicsConnection = new EtcdConnection({ endpoints: etcdEndpoints, callTimeoutMs });
  let topicsWatch: ClusterTopicsWatch | undefined;
  let view: NodeClusterView | undefined;
  let server: KafkaServer;
  try {
    server = await startKafkaServer({
      ...serverOptions,
      autoCreateTopics: serverOptions.autoCreateTopics ?? false,
      store,
      nodeId: brokerId,
      topicAuthority: async (catalog, { wanted, topicsMax }) => {
        const cluster = await joinClusterTopics({
          connection: topicsConnection,
          keys,
          local: {
            content: { clusterId: catalog.clusterId, topics: catalog.topics() },
            path: catalog.filePath,
          },
          wanted,
          topicsMax,
          nowMs: () => Date.now(),
        });
        const refused = await catalog.adopt(cluster);
        // The join checked the node's catalog against the cluster's; what is left to refuse is a
        // cluster of more topics than this node's topicsMax, which fails the start.
        if (refused.length > 0) throw refused[0];
        // Topics a client's request creates (or a growth) are the cluster's.
        catalog.follow((changes) =>
          joinClusterTopics({
            connection: topicsConnection,
            keys,
            local: undefined,
            wanted: changes,
            topicsMax,
            nowMs: () => Date.now(),
            skipRefused: true,
          }),
        );
        topicsWatch = new ClusterTopicsWatch({
          connection: topicsConnection,
          keys,
          catalog,
          intervalMs: TOPICS_LOOK_INTERVAL_MS,
          onWarning,
        });
      },
      clusterView: (self, listeners) => {
        view = new NodeClusterView(self, store, listeners);
        return view;
      },
    });
  } catch (error) {
    topicsConnection.close();
    await store.close();
    throw error;
  }
  topicsWatch!.start();
  const closeTopics = async () => {
    await topicsWatch!.close();
    topicsConnection.close();
  };
  let node: ClusterNode;
  try {
    const [host, port] = splitAddress(server.brokers[0]!);
    node = await ClusterNode.start({
      endpoints: etcdEndpoints,
      prefix,
      store,
      leaseTtlSeconds,
      reconcileIntervalMs,
      callTimeoutMs,
      onWarning: options.onWarning,
      node: {
        nodeId,
        brokerId,
        host,
        port,
        ...(view!.listeners.size > 1
          ? {
              listeners: Object.fromEntries(
                [...view!.listeners].map(([name, e]) => [name, { host: e.host, port: e.port }]),
              ),
            }
          : {}),
      },
    });
  } catch (error) {
    await closeTopics();
    await server.close({ closeStore: true });
    throw error;
  }
  view!.attach(node);
  return {
    server,
    node,
    store,
    close: async () => {
      await node.close();
      await closeTopics();
      await server.close({ closeStore: true });
    },
  };
}

/** The bucket count of the cluster, if one was created under `prefix`. */
async function clusterBucketCount(
  endpoints: readonly string[],
  prefix: string | undefined,
  callTimeoutMs: number | undefined,
): Promise<number | undefined> {
  const connection = new EtcdConnection({ endpoints, callTimeoutMs });
  try {
    const res = await connection.range(
      { key: Buffer.from(new ClusterKeys(prefix).config) },
      'reading the cluster configuration',
    );
    const value = res.kvs[0]?.value;
    return value === undefined
      ? undefined
      : configuredBucketCount(new ClusterKeys(prefix).config, value.toString());
  } finally {
    connection.close();
  }
}

function splitAddress(address: string): [string, number] {
  const colon = address.lastIndexOf(':');
  return [address.slice(0, colon).replace(/^\[|\]$/g, ''), Number(address.slice(colon + 1))];
}
