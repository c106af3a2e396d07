/**
 * The Kafka wire-protocol server over an OffsetStore: real Kafka clients use it as their group
 * coordinator and offset store (docs/kafka.md says what is served). Composition: the topic catalog
 * (in the store directory), the handlers' context, the request router, and a node:net server whose
 * connections each frame, order and bound their own traffic (kafka-connection.ts).
 *
 * Lifecycle: `startKafkaServer` checks the options, opens the catalog, registers every topic's
 * layout with the store (so its coordinators can assign the partitions), creates or grows the
 * topics asked for, then listens. `close()`:
 * 1. stops accepting connections;
 * 2. answers every held Fetch at once;
 * 3. lets every connection finish what it dispatched and write the responses, then ends it;
 * 4. waits for the catalog's writes;
 * 5. closes the store only when asked (`closeStore: true`).
 *
 * Bounds: at most `connectionsMax` connections (one more is closed at once); per connection, the
 * bounds of kafka-connection.ts; idle connections closed after `idleTimeoutMs` by a sweep every
 * quarter of it on the server's clock.
 */
import * as net from 'node:net';
import { OffsetStoreError } from '../../errors/index.js';
import type { OffsetStore } from '../../store.js';
import type { Timer } from '../../util/index.js';
import { TopicCatalog } from '../catalog/index.js';
import { ConsumerMemberDirectory, HANDLERS, HandlerContext, LongPolls, SingleNodeCluster } from '../handlers/index.js';
import { KafkaConnection, type ConnectionLimits, type ConnectionStats } from './kafka-connection.js';
import { RequestRouter } from './request-router.js';
import { resolveServerOptions, type KafkaServerOptions, type ResolvedServerOptions } from './server-options.js';

/** Options of `KafkaServer.close`. */
export interface KafkaServerCloseOptions {
  /** Also close the store, once every connection is closed; default false. */
  readonly closeStore?: boolean;
}

/** What `KafkaServer.stats()` reports. */
export interface KafkaServerStats {
  /** Connections closed at once because `connectionsMax` were open (or the server was closing). */
  readonly refusedConnections: number;
  /** Fetch requests being held for their max_wait_ms. */
  readonly heldFetches: number;
  /** Topics in the catalog. */
  readonly topics: number;
  /** Each open connection. */
  readonly connections: readonly ConnectionStats[];
}

/** A running Kafka wire-protocol server; see `startKafkaServer`. */
export class KafkaServer {
  /** The address it listens on. */
  readonly host: string;
  /** The port it listens on (the one picked when asked for port 0). */
  readonly port: number;
  /** The `host:port` clients are told to connect to: what a client's bootstrap list should hold. */
  readonly brokers: readonly string[];
  readonly #options: ResolvedServerOptions;
  readonly #server: net.Server;
  readonly #context: HandlerContext;
  readonly #connections = new Set<KafkaConnection>();
  #sweepTimer: Timer | undefined;
  #closing: Promise<void> | undefined;
  #refusedConnections = 0;

  private constructor(options: ResolvedServerOptions, server: net.Server, context: HandlerContext, address: net.AddressInfo) {
    this.#options = options;
    this.#server = server;
    this.#context = context;
    this.host = address.address;
    this.port = address.port;
    this.brokers = Object.freeze(context.cluster.brokers().map((b) => `${b.host}:${b.port}`));
  }

  /** Starts a server; see `startKafkaServer`. */
  static async start(options: KafkaServerOptions): Promise<KafkaServer> {
    const resolved = resolveServerOptions(options);
    const { store, clock } = resolved;
    const catalog = await TopicCatalog.open({
      fs: store.fileSystem, dir: store.dir, topicsMax: resolved.topicsMax, nowMs: () => clock.nowMs(),
      onTopicChanged: (topic) => store.setTableLayout(topic.tableId, { bucketCount: topic.partitions }),
    });
    for (const topic of catalog.topics()) store.setTableLayout(topic.tableId, { bucketCount: topic.partitions });
    for (const topic of resolved.topics) await catalog.ensureTopic(topic.name, topic.partitions);
    const server = net.createServer();
    const address = await listen(server, resolved.host, resolved.port);
    const self = { nodeId: resolved.nodeId, host: resolved.advertisedHost ?? address.address, port: resolved.advertisedPort ?? address.port };
    const cluster = resolved.clusterView?.(self) ?? new SingleNodeCluster(self);
    const context = new HandlerContext({
      store, catalog, cluster, clock,
      members: new ConsumerMemberDirectory(resolved.membersNotedMax),
      longPolls: new LongPolls(clock),
      settings: { autoCreateTopics: resolved.autoCreateTopics, defaultPartitions: resolved.defaultPartitions, fetchWaitMsMax: resolved.fetchWaitMsMax },
      onWarning: resolved.onWarning,
    });
    const kafkaServer = new KafkaServer(resolved, server, context, address);
    kafkaServer.#accept();
    return kafkaServer;
  }

  /** Connections open now. */
  get connectionCount(): number {
    return this.#connections.size;
  }

  /** Connections, held Fetches, and what each connection holds now. */
  stats(): KafkaServerStats {
    return {
      refusedConnections: this.#refusedConnections,
      heldFetches: this.#context.longPolls.size,
      topics: this.#context.catalog.size,
      connections: [...this.#connections].map((c) => c.stats()),
    };
  }

  /** The store served. */
  get store(): OffsetStore {
    return this.#options.store;
  }

  #accept(): void {
    const { clock, idleTimeoutMs, connectionsMax } = this.#options;
    const router = new RequestRouter(HANDLERS, this.#context);
    const limits: ConnectionLimits = {
      requestBytesMax: this.#options.requestBytesMax,
      inFlightRequestsMax: this.#options.inFlightRequestsMax,
      pendingResponseBytesMax: this.#options.pendingResponseBytesMax,
      closeGraceMs: this.#options.closeGraceMs,
    };
    this.#server.on('connection', (socket) => {
      if (this.#closing !== undefined || this.#connections.size >= connectionsMax) {
        this.#refusedConnections++;
        socket.on('error', () => {});
        socket.destroy();
        return;
      }
      const connection = new KafkaConnection(socket, router, limits, clock);
      this.#connections.add(connection);
      void connection.closed.then(() => this.#connections.delete(connection));
    });
    const sweepMs = Math.max(1, Math.floor(idleTimeoutMs / 4));
    const sweep = () => {
      const nowMs = clock.nowMs();
      for (const connection of this.#connections) if (connection.isIdle(nowMs, idleTimeoutMs)) connection.destroy();
      if (this.#closing === undefined) this.#sweepTimer = clock.setTimer(sweepMs, sweep);
    };
    this.#sweepTimer = clock.setTimer(sweepMs, sweep);
  }

  /**
   * Stops accepting connections, answers held Fetches, lets every connection finish the requests it
   * dispatched and closes it, then closes the store if `closeStore`. Idempotent: a second call
   * returns the first one's promise.
   */
  close(options?: KafkaServerCloseOptions): Promise<void> {
    this.#closing ??= this.#close(options?.closeStore === true);
    return this.#closing;
  }

  async #close(closeStore: boolean): Promise<void> {
    this.#sweepTimer?.cancel();
    const stopped = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#context.longPolls.releaseAll();
    await Promise.all([...this.#connections].map((c) => c.close()));
    await stopped;
    await this.#context.catalog.idle();
    if (closeStore) await this.#options.store.close();
  }
}

/** Listens; a failure (EADDRINUSE, EACCES, EADDRNOTAVAIL...) is INVALID_CONFIG with the Node error as its cause. */
function listen(server: net.Server, host: string, port: number): Promise<net.AddressInfo> {
  return new Promise((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) => reject(new OffsetStoreError('INVALID_CONFIG', `cannot listen on ${host}:${port}: ${error.code ?? error.message}`, { cause: error }));
    server.once('error', failed);
    server.listen({ host, port }, () => {
      server.off('error', failed);
      resolve(server.address() as net.AddressInfo);
    });
  });
}

/**
 * Starts a Kafka wire-protocol server over `options.store` (open), listening on `options.host`
 * (default 127.0.0.1) and `options.port` (default 0: a free port). Resolves once it listens, with
 * the address bound and the `brokers` a client should bootstrap from. Rejects with the catalog's
 * error (CORRUPT_MESSAGE for a damaged `kafka-topics.json`; INVALID_REQUEST or INVALID_CONFIG for a
 * topic of `options.topics` that cannot be created or would shrink) or INVALID_CONFIG when it
 * cannot listen (the Node error, EADDRINUSE or the like, is the cause). See docs/kafka.md.
 */
export function startKafkaServer(options: KafkaServerOptions): Promise<KafkaServer> {
  return KafkaServer.start(options);
}
