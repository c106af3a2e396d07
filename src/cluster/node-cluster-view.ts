/**
 * NodeClusterView: the Kafka front end's ClusterView answered by a cluster node. Metadata lists the
 * live nodes; FindCoordinator names the owner of the group's offsets-bucket (`bucketFor(groupId)`),
 * or, while the bucket is between owners, the node rendezvous hashing places it on (it will own it
 * shortly; until then it answers NOT_COORDINATOR and the client asks again).
 *
 * This node names itself only while it serves the bucket (owns and hosts it under a confirmed
 * lease). Otherwise its own view of itself is not to be trusted: it is still joining, loading the
 * bucket, cut off from etcd with a list of owners that went stale, or a process whose node id
 * another process has taken over. Naming itself would send the client back here to be told
 * NOT_COORDINATOR, over and over, so it names no one (COORDINATOR_NOT_AVAILABLE: the client waits
 * and asks again), unless etcd's owner is registered at another address, which it names.
 */
import type { BrokerEndpoint, ClusterView } from '../kafka/index.js';
import type { OffsetStore } from '../store.js';
import type { ClusterNode, NodeInfo } from './cluster-node.js';
import { rendezvousOwner } from './rendezvous.js';

/** A node's address on listener `listenerName` (its registered default when it names none such). */
function endpoint(info: NodeInfo, listenerName?: string): BrokerEndpoint {
  const address = listenerName === undefined ? undefined : info.listeners?.[listenerName];
  return {
    nodeId: info.brokerId,
    host: address?.host ?? info.host,
    port: address?.port ?? info.port,
  };
}

/** A cluster node's answers to who serves what. */
export class NodeClusterView implements ClusterView {
  /** This node as a broker. */
  readonly self: BrokerEndpoint;
  /** This node's address on each of its listeners, by name. */
  readonly listeners: ReadonlyMap<string, BrokerEndpoint>;
  readonly #store: OffsetStore;
  #node: ClusterNode | undefined;

  /** A view of `self` alone until `attach` gives it the node (the node joins once the server is bound). */
  constructor(
    self: BrokerEndpoint,
    store: OffsetStore,
    listeners: ReadonlyMap<string, BrokerEndpoint> = new Map(),
  ) {
    this.self = Object.freeze({ ...self });
    this.listeners = listeners;
    this.#store = store;
  }

  /** This node on listener `listenerName`. */
  #selfOn(listenerName?: string): BrokerEndpoint {
    return (listenerName === undefined ? undefined : this.listeners.get(listenerName)) ?? this.self;
  }

  /** From now on, answers from `node`. */
  attach(node: ClusterNode): void {
    this.#node = node;
  }

  /** The live nodes (this one included even before it is registered). */
  brokers(listenerName?: string): readonly BrokerEndpoint[] {
    const self = this.#selfOn(listenerName);
    if (this.#node === undefined) return [self];
    const live = this.#node
      .liveNodes()
      .map((n) => (n.brokerId === self.nodeId ? self : endpoint(n, listenerName)));
    return live.some((b) => b.nodeId === self.nodeId) ? live : [self, ...live];
  }

  /**
   * The owner of the group's offsets-bucket, else the live node it is placed on; undefined while
   * neither can be named but this node, which does not serve it (see the header).
   */
  coordinatorFor(groupId: string, listenerName?: string): BrokerEndpoint | undefined {
    const node = this.#node;
    if (node === undefined) return undefined;
    const bucket = this.#store.bucketFor(groupId);
    if (node.serves(bucket)) return this.#selfOn(listenerName);
    const owner = node.ownerOf(bucket);
    if (owner !== undefined) return this.#other(endpoint(owner, listenerName));
    const live = node.liveNodes();
    const placed = rendezvousOwner(
      bucket,
      live.map((n) => n.nodeId),
    );
    const info = live.find((n) => n.nodeId === placed);
    return info === undefined || info.nodeId === node.nodeId
      ? undefined
      : this.#other(endpoint(info, listenerName));
  }

  /** `broker`, unless it is this node's own address. */
  #other(broker: BrokerEndpoint): BrokerEndpoint | undefined {
    const mine = [this.self, ...this.listeners.values()];
    return mine.some((m) => m.host === broker.host && m.port === broker.port) ? undefined : broker;
  }

  /** Every node serves the topics' partitions itself (they are the catalog's, not the cluster's). */
  leaderOf(): BrokerEndpoint {
    return this.self;
  }
}
