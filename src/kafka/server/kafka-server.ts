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
 * Bounds: at most `connectionsMax` connections, each counted from its TCP connection until its
 * socket closes, a TLS one still in its handshake included (one more is closed at once); per
 * connection, the bounds of kafka-connection.ts; idle connections closed after `idleTimeoutMs` by a
 * sweep every quarter of it on the server's clock.
 */
import * as net from 'node:net';
import * as tls from 'node:tls';
import { OffsetStoreError } from '../../errors/index.js';
import { holdServingFlushes } from '../../log/index.js';
import { CHECK_DIRECTORY, HOLDS_CONSUMER_MEMBER, type OffsetStore } from '../../store.js';
import { elapsedMs, type Timer } from '../../util/index.js';
import { TopicCatalog } from '../catalog/index.js';
import {
  ConsumerMemberDirectory,
  HANDLERS,
  HandlerContext,
  LongPolls,
  SingleNodeCluster,
  type BrokerEndpoint,
  type HandlerTable,
} from '../handlers/index.js';
import {
  ConnectionSession,
  ServerSecurity,
  authorizingHandlers,
  certificatePrincipal,
  groupLimitHandlers,
  saslHandlers,
  usesTls,
  type ResolvedListener,
  type SecurityProtocol,
  type SecurityStats,
} from '../security/index.js';
import {
  KafkaConnection,
  type ConnectionLimits,
  type ConnectionStats,
} from './kafka-connection.js';
import { addressGroup, clientAddress } from '../security/client-address.js';
import { RequestRouter } from './request-router.js';
import { API_KEYS } from '../protocol/index.js';
import {
  resolveServerOptions,
  type KafkaServerOptions,
  type ResolvedServerOptions,
} from './server-options.js';

/** Options of `KafkaServer.close`. */
export interface KafkaServerCloseOptions {
  /** Also close the store, once every connection is closed; default false. */
  readonly closeStore?: boolean;
}

/** A listener the server listens on. */
export interface BoundListener {
  /** Its name. */
  readonly name: string;
  /** Its security protocol. */
  readonly securityProtocol: SecurityProtocol;
  /** The address it is bound to. */
  readonly host: string;
  /** The port it is bound to. */
  readonly port: number;
  /** The `host:port` its clients are told to connect to. */
  readonly brokers: readonly string[];
}

/** How long a TLS client has to finish its handshake. */
const TLS_HANDSHAKE_TIMEOUT_MS = 10_000;

/** What `KafkaServer.stats()` reports. */
export interface KafkaServerStats {
  /** Authentication, connection-limit and authorization counters. */
  readonly security: SecurityStats;
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
  /**
   * The `host:port` clients are told to connect to: what a client's bootstrap list should hold (the
   * first listener's). A fresh array on each read, so that it can be handed to a client whose
   * options type wants a mutable one (kafkajs's `brokers: string[]`).
   */
  get brokers(): string[] {
    return [...this.#brokers];
  }
  readonly #brokers: readonly string[];
  /** Every listener, in the order of the options. */
  readonly listeners: readonly BoundListener[];
  readonly #options: ResolvedServerOptions;
  readonly #servers: readonly net.Server[];
  readonly #context: HandlerContext;
  readonly #security: ServerSecurity;
  readonly #connections = new Set<KafkaConnection>();
  /** TCP connections accepted and not closed: those served, and TLS ones still in their handshake. */
  #openSockets = 0;
  /** TLS connections whose handshake has not ended, by their client's address and port. */
  readonly #handshaking = new Map<string, net.Socket>();
  #sweepTimer: Timer | undefined;
  #closing: Promise<void> | undefined;
  #closingStore: Promise<void> | undefined;
  /** Tells the process's logs that commits arrive over the network (released at close). */
  readonly #releaseServingFlushes = holdServingFlushes();
  #refusedConnections = 0;

  private constructor(
    options: ResolvedServerOptions,
    servers: readonly net.Server[],
    context: HandlerContext,
    security: ServerSecurity,
    addresses: readonly net.AddressInfo[],
  ) {
    this.#options = options;
    this.#servers = servers;
    this.#context = context;
    this.#security = security;
    this.host = addresses[0]!.address;
    this.port = addresses[0]!.port;
    this.#brokers = Object.freeze(context.cluster.brokers().map((b) => `${b.host}:${b.port}`));
    this.listeners = Object.freeze(
      options.listeners.map((l, i) =>
        Object.freeze({
          name: l.name,
          securityProtocol: l.securityProtocol,
          host: addresses[i]!.address,
          port: addresses[i]!.port,
          brokers: Object.freeze(context.cluster.brokers(l.name).map((b) => `${b.host}:${b.port}`)),
        }),
      ),
    );
  }

  /** Starts a server; see `startKafkaServer`. */
  static async start(options: KafkaServerOptions): Promise<KafkaServer> {
    const resolved = resolveServerOptions(options);
    const { store, clock } = resolved;
    // Its topic catalog, commits and group protocol all write.
    if (store.readOnly)
      throw new OffsetStoreError(
        'STORE_READ_ONLY',
        `the store in ${store.dir} is open to read only: a Kafka server cannot serve it`,
      );
    const catalog = await TopicCatalog.open({
      fs: store.fileSystem,
      dir: store.dir,
      topicsMax: resolved.topicsMax,
      nowMs: () => clock.nowMs(),
      onTopicChanged: (topic) =>
        store.setTableLayout(topic.tableId, { bucketCount: topic.partitions }),
      highestTableIdInUse: () => store.highestTableId(),
      onWarning: resolved.onWarning,
      checkDirectory: () => store[CHECK_DIRECTORY](),
    });
    for (const topic of catalog.topics())
      store.setTableLayout(topic.tableId, { bucketCount: topic.partitions });
    await resolved.topicAuthority?.(catalog, {
      wanted: resolved.topics,
      topicsMax: resolved.topicsMax,
    });
    for (const topic of resolved.topics) await catalog.ensureTopic(topic.name, topic.partitions);
    const security = await ServerSecurity.open({
      options: resolved.security,
      clock,
      fs: store.fileSystem,
      dir: store.dir,
      checkDirectory: () => store[CHECK_DIRECTORY](),
      onWarning: resolved.onWarning,
      listeners: resolved.listeners,
    });
    const servers: net.Server[] = [];
    const addresses: net.AddressInfo[] = [];
    try {
      for (const listener of resolved.listeners) {
        const server = createListenerServer(listener);
        servers.push(server);
        addresses.push(await listen(server, listener.host, listener.port));
      }
    } catch (error) {
      for (const server of servers) server.close();
      await security.close();
      throw error;
    }
    const endpoints = new Map<string, BrokerEndpoint>(
      resolved.listeners.map((l, i) => [
        l.name,
        {
          nodeId: resolved.nodeId,
          host: l.advertisedHost ?? addresses[i]!.address,
          port: l.advertisedPort ?? addresses[i]!.port,
        },
      ]),
    );
    const self = endpoints.get(resolved.listeners[0]!.name)!;
    const cluster =
      resolved.clusterView?.(self, endpoints) ?? new SingleNodeCluster(self, endpoints);
    const context = new HandlerContext({
      store,
      catalog,
      cluster,
      clock,
      members: new ConsumerMemberDirectory(resolved.membersNotedMax, undefined, {
        held: (groupId, memberId) => store[HOLDS_CONSUMER_MEMBER](groupId, memberId),
      }),
      longPolls: new LongPolls(clock),
      settings: {
        autoCreateTopics: resolved.autoCreateTopics,
        defaultPartitions: resolved.defaultPartitions,
        fetchWaitMsMax: resolved.fetchWaitMsMax,
      },
      onWarning: resolved.onWarning,
    });
    const kafkaServer = new KafkaServer(resolved, servers, context, security, addresses);
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
      security: this.#security.stats(),
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

  /**
   * Reads the SASL users and the ACLs from the store directory again, after `offset-store users` or
   * `offset-store acls` changed them (`offset-store serve` does this on SIGHUP). Connections keep
   * the principal they authenticated as; every later request is authorized against the new ACLs.
   * Rejects (and changes nothing) when a file is damaged.
   */
  reloadSecurity(): Promise<void> {
    return this.#security.reload();
  }

  #handlers(): HandlerTable {
    const sasl = saslHandlers(this.#security);
    const handlers: HandlerTable = {
      ...HANDLERS,
      [API_KEYS.SaslHandshake]: sasl.handshake,
      [API_KEYS.SaslAuthenticate]: sasl.authenticate,
    };
    const { authorizer, auditLogFile } = this.#options.security;
    const limits = this.#security.groupLimits;
    // The group limit runs after the ACL checks: a request refused by an ACL counts no group.
    const limited =
      limits === undefined
        ? handlers
        : groupLimitHandlers(handlers, this.#security, limits, authorizer?.superUsers ?? []);
    return authorizer === undefined && auditLogFile === undefined
      ? limited
      : authorizingHandlers(limited, this.#security);
  }

  #accept(): void {
    const { clock, idleTimeoutMs } = this.#options;
    const router = new RequestRouter(
      this.#handlers(),
      this.#context,
      this.#security.quotas.enabled ? this.#security.quotas : undefined,
    );
    const limits: ConnectionLimits = {
      requestBytesMax: this.#options.requestBytesMax,
      inFlightRequestsMax: this.#options.inFlightRequestsMax,
      pendingResponseBytesMax: this.#options.pendingResponseBytesMax,
      closeGraceMs: this.#options.closeGraceMs,
    };
    this.#options.listeners.forEach((listener, i) => {
      const server = this.#servers[i]!;
      // Every TCP connection, TLS or not, counts against its address and connectionsMax from its
      // first byte until its socket closes (a TLS handshake that fails or times out closes it), so
      // a client holding connections open (a slow TLS handshake, a silent SASL client) hits its
      // address's limit, not the server's.
      server.on('connection', (socket: net.Socket) => {
        socket.on('error', () => {});
        const address = clientAddress(socket);
        const group = addressGroup(address);
        if (
          this.#closing !== undefined ||
          this.#openSockets >= this.#options.connectionsMax ||
          !this.#security.connectionOpened(group)
        ) {
          this.#refusedConnections++;
          socket.destroy();
          return;
        }
        this.#openSockets++;
        socket.once('close', () => {
          this.#openSockets--;
          this.#security.connectionReleased(group);
        });
        if (!usesTls(listener.securityProtocol))
          this.#serve(socket, listener, address, router, limits, undefined);
        else {
          // Until its handshake ends: close() destroys it rather than wait for the handshake timeout.
          const key = socketKey(socket);
          this.#handshaking.set(key, socket);
          socket.once('close', () => {
            if (this.#handshaking.get(key) === socket) this.#handshaking.delete(key);
          });
        }
      });
      if (usesTls(listener.securityProtocol)) {
        server.on('secureConnection', (socket: tls.TLSSocket) => {
          this.#handshaking.delete(socketKey(socket));
          const certificate = socket.authorized ? socket.getPeerX509Certificate() : undefined;
          this.#serve(
            socket,
            listener,
            clientAddress(socket),
            router,
            limits,
            certificatePrincipal(certificate),
          );
        });
        server.on('tlsClientError', (_error: Error, socket: tls.TLSSocket) => socket.destroy());
      }
    });
    const sweepMs = Math.max(1, Math.floor(idleTimeoutMs / 4));
    const sweep = () => {
      const atMs = elapsedMs(clock);
      for (const connection of this.#connections)
        if (connection.isIdle(atMs, idleTimeoutMs)) connection.destroy();
      if (this.#closing === undefined) this.#sweepTimer = clock.setTimer(sweepMs, sweep);
    };
    this.#sweepTimer = clock.setTimer(sweepMs, sweep);
  }

  #serve(
    socket: net.Socket,
    listener: ResolvedListener,
    address: string,
    router: RequestRouter,
    limits: ConnectionLimits,
    principal: string | undefined,
  ): void {
    if (socket.destroyed || this.#closing !== undefined) {
      socket.destroy();
      return;
    }
    const session = new ConnectionSession(address, listener, principal);
    const connection = new KafkaConnection(socket, router, limits, this.#options.clock, (closing) =>
      session.attach(closing),
    );
    this.#connections.add(connection);
    // A SASL connection that has not authenticated in time is closed: what it sends meanwhile
    // (ApiVersions) keeps it from being idle, not from holding its slot for good.
    const deadline =
      session.state === 'authenticated'
        ? undefined
        : this.#options.clock.setTimer(this.#security.options.authenticationTimeoutMs, () => {
            if (session.state !== 'authenticated') connection.destroy();
          });
    void connection.closed.then(() => {
      deadline?.cancel();
      this.#connections.delete(connection);
      this.#security.sessionClosed(session);
    });
  }

  /**
   * Stops accepting connections, answers held Fetches, lets every connection finish the requests it
   * dispatched and closes it, then closes the store if `closeStore`. Idempotent: a later call
   * settles with the first one, and closes the store too if it asks to (a first call that did not
   * must not make a later `closeStore: true` leave the store open).
   */
  close(options?: KafkaServerCloseOptions): Promise<void> {
    this.#closing ??= this.#close();
    if (options?.closeStore !== true) return this.#closing;
    this.#closingStore ??= this.#closing.then(() => this.#options.store.close());
    return this.#closingStore;
  }

  async #close(): Promise<void> {
    this.#releaseServingFlushes();
    this.#sweepTimer?.cancel();
    const stopped = Promise.all(
      this.#servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))),
    );
    this.#context.longPolls.releaseAll();
    for (const socket of this.#handshaking.values()) socket.destroy();
    this.#handshaking.clear();
    await Promise.all([...this.#connections].map((c) => c.close()));
    await stopped;
    await this.#context.catalog.idle();
    await this.#security.close();
  }
}

/** A connection's client address and port, the same for its TCP socket and the TLS socket over it. */
function socketKey(socket: net.Socket): string {
  return `${socket.remoteAddress}|${socket.remotePort}`;
}

/** A node:net server, or a node:tls one for SSL and SASL_SSL (client certificates verified against `ca`). */
function createListenerServer(listener: ResolvedListener): net.Server {
  const material = listener.tls;
  if (material === undefined) return net.createServer();
  return tls.createServer({
    cert: material.cert,
    key: material.key,
    ca: material.ca,
    requestCert: material.ca !== undefined,
    rejectUnauthorized: material.requireClientCertificate === true,
    handshakeTimeout: TLS_HANDSHAKE_TIMEOUT_MS,
    minVersion: 'TLSv1.2',
  });
}

/** Listens; a failure (EADDRINUSE, EACCES, EADDRNOTAVAIL...) is INVALID_CONFIG with the Node error as its cause. */
function listen(server: net.Server, host: string, port: number): Promise<net.AddressInfo> {
  return new Promise((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) =>
      reject(
        new OffsetStoreError(
          'INVALID_CONFIG',
          `cannot listen on ${host}:${port}: ${error.code ?? error.message}`,
          { cause: error },
        ),
      );
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
