/**
 * The port through which handlers learn who serves what: the brokers a client may connect to and
 * which one coordinates a group. A single server answers it itself (SingleNodeCluster: one broker,
 * this server's advertised address, coordinator of every group and leader of every partition); a
 * cluster of servers would answer it from its membership instead, without the handlers changing.
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
  /** Every live broker, this one included. */
  brokers(): readonly BrokerEndpoint[];
  /** The broker coordinating `groupId`. */
  coordinatorFor(groupId: string): BrokerEndpoint;
  /** The broker leading every partition of the topics this server serves. */
  leaderOf(topic: string, partition: number): BrokerEndpoint;
}

/** The cluster of one: this server serves everything. */
export class SingleNodeCluster implements ClusterView {
  readonly self: BrokerEndpoint;
  readonly #brokers: readonly BrokerEndpoint[];

  constructor(self: BrokerEndpoint) {
    this.self = Object.freeze({ ...self });
    this.#brokers = Object.freeze([this.self]);
  }

  brokers(): readonly BrokerEndpoint[] {
    return this.#brokers;
  }

  coordinatorFor(): BrokerEndpoint {
    return this.self;
  }

  leaderOf(): BrokerEndpoint {
    return this.self;
  }
}
