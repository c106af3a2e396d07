/**
 * The port through which handlers learn who serves what: the brokers a client may connect to and
 * which one coordinates a group. A single server answers it itself (SingleNodeCluster: one broker,
 * this server's advertised address, coordinator of every group and leader of every partition); a
 * cluster of servers would answer it from its membership instead, without the handlers changing.
 *
 * A server with several listeners (PLAINTEXT and SASL_SSL side by side) advertises one address per
 * listener; a broker is named to a client at the address of the listener its request came in on
 * (`listenerName`), as Kafka's Metadata does. Without a listener name, the first listener's.
 */

/** A broker as Metadata and FindCoordinator name it. */
export interface BrokerEndpoint {
  /** Its node id. */
  readonly nodeId: number;
  /** The host clients connect to (the advertised one, not necessarily the bound one). */
  readonly host: string;
  /** The port clients connect to. */
  readonly port: number;
}

/** Who serves what. */
export interface ClusterView {
  /** This server. */
  readonly self: BrokerEndpoint;
  /** Every live broker, this one included, at their addresses on listener `listenerName`. */
  brokers(listenerName?: string): readonly BrokerEndpoint[];
  /**
   * The broker coordinating `groupId`, at its address on listener `listenerName`; undefined while
   * none can be named (a cluster's bucket between owners): FindCoordinator then answers
   * COORDINATOR_NOT_AVAILABLE, and the client asks again.
   */
  coordinatorFor(groupId: string, listenerName?: string): BrokerEndpoint | undefined;
  /** The broker leading every partition of the topics this server serves. */
  leaderOf(topic: string, partition: number): BrokerEndpoint;
}

/** The cluster of one: this server serves everything. */
export class SingleNodeCluster implements ClusterView {
  readonly self: BrokerEndpoint;
  readonly #brokers: readonly BrokerEndpoint[];
  readonly #byListener = new Map<
    string,
    { self: BrokerEndpoint; brokers: readonly BrokerEndpoint[] }
  >();

  /** `self`: this server at its first listener's address; `listeners`: its address on each listener, by name. */
  constructor(self: BrokerEndpoint, listeners: ReadonlyMap<string, BrokerEndpoint> = new Map()) {
    this.self = Object.freeze({ ...self });
    this.#brokers = Object.freeze([this.self]);
    for (const [name, endpoint] of listeners) {
      const frozen = Object.freeze({ ...endpoint });
      this.#byListener.set(name, { self: frozen, brokers: Object.freeze([frozen]) });
    }
  }

  brokers(listenerName?: string): readonly BrokerEndpoint[] {
    return (
      (listenerName === undefined ? undefined : this.#byListener.get(listenerName)?.brokers) ??
      this.#brokers
    );
  }

  coordinatorFor(_groupId?: string, listenerName?: string): BrokerEndpoint {
    return (
      (listenerName === undefined ? undefined : this.#byListener.get(listenerName)?.self) ??
      this.self
    );
  }

  leaderOf(): BrokerEndpoint {
    return this.self;
  }
}
