/**
 * NodeClusterView: the Kafka front end's ClusterView answered by a cluster node. Metadata lists the
 * live nodes; FindCoordinator names the owner of the group's offsets-bucket (`bucketFor(groupId)`),
 * or, while the bucket is between owners, the node rendezvous hashing places it on (it will own it
 * shortly; until then it answers NOT_COORDINATOR and the client asks again).
 */
import type { BrokerEndpoint, ClusterView } from '../kafka/index.js';
import type { OffsetStore } from '../store.js';
import type { ClusterNode, NodeInfo } from './cluster-node.js';
import { rendezvousOwner } from './rendezvous.js';

function endpoint(info: NodeInfo): BrokerEndpoint {
  return { nodeId: info.brokerId, host: info.host, port: info.port };
}

/** A cluster node's answers to who serves what. */
export class NodeClusterView implements ClusterView {
  /** This node as a broker. */
  readonly self: BrokerEndpoint;
  readonly #store: OffsetStore;
  #node: ClusterNode | undefined;

  /** A view of `self` alone until `attach` gives it the node (the node joins once the server is bound). */
  constructor(self: BrokerEndpoint, store: OffsetStore) {
    this.self = Object.freeze({ ...self });
    this.#store = store;
  }

  /** From now on, answers from `node`. */
  attach(node: ClusterNode): void {
    this.#node = node;
  }

  /** The live nodes (this one included even before it is registered). */
  brokers(): readonly BrokerEndpoint[] {
    if (this.#node === undefined) return [this.self];
    const live = this.#node.liveNodes().map(endpoint);
    return live.some((b) => b.nodeId === this.self.nodeId) ? live : [this.self, ...live];
  }

  /** The owner of the group's offsets-bucket, else where it is placed, else this node. */
  coordinatorFor(groupId: string): BrokerEndpoint {
    if (this.#node === undefined) return this.self;
    const bucket = this.#store.bucketFor(groupId);
    const owner = this.#node.ownerOf(bucket);
    if (owner !== undefined)
      return owner.nodeId === this.#node.nodeId ? this.self : endpoint(owner);
    const placed = rendezvousOwner(
      bucket,
      this.#node.liveNodes().map((n) => n.nodeId),
    );
    const info = this.#node.liveNodes().find((n) => n.nodeId === placed);
    return info === undefined || info.nodeId === this.#node.nodeId ? this.self : endpoint(info);
  }

  /** Every node serves the topics' partitions itself (they are the catalog's, not the cluster's). */
  leaderOf(): BrokerEndpoint {
    return this.self;
  }
}
