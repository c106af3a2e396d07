/**
 * The options of `startKafkaServer`, their defaults, and their checks (a wrong type is a TypeError,
 * a value out of range a RangeError, both naming the option, before anything is opened or bound).
 * The defaults follow Kafka's broker where it has the same setting.
 */
import type { OffsetStore } from '../../store.js';
import { warningsTo } from '../../store-options.js';
import {
  checkClock,
  checkOptionsBag,
  SystemClock,
  TIMER_MS_MAX,
  type Clock,
} from '../../util/index.js';
import { PARTITION_COUNT_MAX, type TopicCatalog } from '../catalog/index.js';
import {
  resolveListener,
  resolveSecurityOptions,
  type ListenerOptions,
  type ResolvedListener,
  type ResolvedSecurityOptions,
  type SecurityOptions,
} from '../security/index.js';
import type { BrokerEndpoint, ClusterView } from '../handlers/index.js';

/** A topic to serve: created at start if missing, grown if it has fewer partitions. */
export interface TopicSpec {
  /** The topic's name (Kafka's rules: 1 to 249 characters of `[a-zA-Z0-9._-]`). */
  readonly name: string;
  /** Its partition count, 1 to 65,536; a topic that has more already is refused (counts never shrink). */
  readonly partitions: number;
}

/** Options of `startKafkaServer`. */
export interface KafkaServerOptions {
  /** The store to serve; open. The server never closes it unless `close({ closeStore: true })`. */
  readonly store: OffsetStore;
  /**
   * Listeners, each with its security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), address,
   * advertised address, TLS material and SASL mechanisms (docs/security.md). Default: one PLAINTEXT
   * listener from `host`, `port`, `advertisedHost` and `advertisedPort`, which must then be left
   * out.
   */
  readonly listeners?: readonly ListenerOptions[];
  /** Authorization, login throttling, connections per address, audit log (docs/security.md). */
  readonly security?: SecurityOptions;
  /** Address to listen on; default '127.0.0.1' (loopback: pass another to be reachable from elsewhere). */
  readonly host?: string;
  /** Port to listen on; default 0 (a free port, reported by the server's `port`). */
  readonly port?: number;
  /** Host clients are told to connect to (Metadata, FindCoordinator); default `host`. Required when `host` is a wildcard address. */
  readonly advertisedHost?: string;
  /** Port clients are told to connect to; default the bound port. */
  readonly advertisedPort?: number;
  /** This server's node id in Metadata and FindCoordinator; default 0. */
  readonly nodeId?: number;
  /** Topics to serve from the start (created, or grown, in the catalog before the server listens). */
  readonly topics?: readonly TopicSpec[];
  /** Create an unknown topic a Metadata request asks for, when the request allows it; default true. */
  readonly autoCreateTopics?: boolean;
  /** Partitions of a topic created automatically; default 1 (Kafka's num.partitions). */
  readonly defaultPartitions?: number;
  /** Most topics in the catalog; default 10,000. */
  readonly topicsMax?: number;
  /** Largest request, in bytes; a bigger one closes its connection unread. Default 100 MiB (Kafka's socket.request.max.bytes). */
  readonly requestBytesMax?: number;
  /** Most open connections, counted from the TCP connection (TLS handshakes in progress included); one more is closed at once. Default 1000. */
  readonly connectionsMax?: number;
  /** A connection with nothing in flight and no traffic for this long is closed; default 10 min (Kafka's connections.max.idle.ms). */
  readonly idleTimeoutMs?: number;
  /** Most requests of one connection in flight at once (pipelined); past it, the connection is not read. Default 64. */
  readonly inFlightRequestsMax?: number;
  /**
   * Bytes of responses waiting in a connection's socket above which it is not read until they
   * drain; default 1 MiB. A value under the socket's high-water mark (16 KiB on Node 20, 64 KiB on
   * Node 22) acts as that mark.
   */
  readonly pendingResponseBytesMax?: number;
  /** The longest a Fetch is held, whatever max_wait_ms it asks for; default 30 s. */
  readonly fetchWaitMsMax?: number;
  /** How long a closing connection waits for the client to close its side; default 5 s. */
  readonly closeGraceMs?: number;
  /**
   * Most consumer-group members whose subscribed topic names and client ids the server remembers;
   * default 65,536. Those of members the store holds are never dropped for others': when they fill
   * it, a heartbeat that would add more is answered COORDINATOR_NOT_AVAILABLE (docs/kafka.md).
   */
  readonly membersNotedMax?: number;
  /** Time and timers (held Fetches, idle connections, close grace); default the system clock. */
  readonly clock?: Clock;
  /** Receives problems the server survived (a handler's bug, a failed catalog write); default process.emitWarning. */
  readonly onWarning?: (message: string) => void;
  /**
   * Where the topics come from, when this server is one node of a cluster: called at start, once
   * the server's own catalog is read and before `topics` are made to exist in it, with that catalog
   * and the topics the server is told to serve; it makes the catalog a copy of the cluster's
   * (`TopicCatalog.adopt`). A rejection fails the start. Default: the server's catalog alone.
   */
  readonly topicAuthority?: (
    catalog: TopicCatalog,
    node: { readonly wanted: readonly TopicSpec[]; readonly topicsMax: number },
  ) => Promise<void>;
  /**
   * Who serves what, when this server is one node of a cluster: called once the server is bound,
   * with its own endpoint; Metadata and FindCoordinator answer from the view it returns. Default: a
   * cluster of one (this server coordinates every group).
   */
  readonly clusterView?: (
    self: BrokerEndpoint,
    listeners: ReadonlyMap<string, BrokerEndpoint>,
  ) => ClusterView;
}

/** Options after checking, with defaults. */
export interface ResolvedServerOptions {
  readonly store: OffsetStore;
  /** At least one; the first is the one `host`, `port` and `brokers` of the server report. */
  readonly listeners: readonly ResolvedListener[];
  readonly security: ResolvedSecurityOptions;
  readonly topicAuthority: KafkaServerOptions['topicAuthority'];
  readonly clusterView:
    | ((self: BrokerEndpoint, listeners: ReadonlyMap<string, BrokerEndpoint>) => ClusterView)
    | undefined;
  readonly host: string;
  readonly port: number;
  readonly advertisedHost: string | undefined;
  readonly advertisedPort: number | undefined;
  readonly nodeId: number;
  readonly topics: readonly TopicSpec[];
  readonly autoCreateTopics: boolean;
  readonly defaultPartitions: number;
  readonly topicsMax: number;
  readonly requestBytesMax: number;
  readonly connectionsMax: number;
  readonly idleTimeoutMs: number;
  readonly inFlightRequestsMax: number;
  readonly pendingResponseBytesMax: number;
  readonly fetchWaitMsMax: number;
  readonly closeGraceMs: number;
  readonly membersNotedMax: number;
  readonly clock: Clock;
  readonly onWarning: (message: string) => void;
}

/** The defaults. */
export const SERVER_DEFAULTS = {
  host: '127.0.0.1',
  port: 0,
  nodeId: 0,
  autoCreateTopics: true,
  defaultPartitions: 1,
  topicsMax: 10_000,
  requestBytesMax: 100 * 1024 * 1024,
  connectionsMax: 1000,
  idleTimeoutMs: 10 * 60 * 1000,
  inFlightRequestsMax: 64,
  pendingResponseBytesMax: 1024 * 1024,
  fetchWaitMsMax: 30_000,
  closeGraceMs: 5000,
  membersNotedMax: 65_536,
} as const;

const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '']);
const INT32_MAX = 0x7fffffff;

function integer(value: unknown, name: string, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number')
    throw new TypeError(`options.${name} must be a number, got ${typeof value}`);
  if (!Number.isSafeInteger(value) || value < min || value > max)
    throw new RangeError(`options.${name} must be an integer in [${min}, ${max}], got ${value}`);
  return value;
}

function text(value: unknown, name: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string')
    throw new TypeError(`options.${name} must be a string, got ${typeof value}`);
  return value;
}

function flag(value: unknown, name: string, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean')
    throw new TypeError(`options.${name} must be a boolean, got ${typeof value}`);
  return value;
}

function topicSpecs(value: unknown): TopicSpec[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new TypeError('options.topics must be an array');
  return value.map((t: unknown, i) => {
    const { name, partitions } = (typeof t === 'object' && t !== null ? t : {}) as {
      name?: unknown;
      partitions?: unknown;
    };
    if (typeof name !== 'string') throw new TypeError(`options.topics[${i}].name must be a string`);
    return {
      name,
      partitions: integer(partitions, `topics[${i}].partitions`, 0, 1, PARTITION_COUNT_MAX),
    };
  });
}

/** The keys of KafkaServerOptions: any other is refused (a misspelt option is not ignored). */
const SERVER_OPTION_NAMES = [
  'store',
  'listeners',
  'security',
  'host',
  'port',
  'advertisedHost',
  'advertisedPort',
  'nodeId',
  'topics',
  'autoCreateTopics',
  'defaultPartitions',
  'topicsMax',
  'requestBytesMax',
  'connectionsMax',
  'idleTimeoutMs',
  'inFlightRequestsMax',
  'pendingResponseBytesMax',
  'fetchWaitMsMax',
  'closeGraceMs',
  'membersNotedMax',
  'clock',
  'onWarning',
  'topicAuthority',
  'clusterView',
] as const satisfies readonly (keyof KafkaServerOptions)[];

/** Checks the options (each read once) and applies the defaults. */
export function resolveServerOptions(options: KafkaServerOptions): ResolvedServerOptions {
  checkOptionsBag(options, SERVER_OPTION_NAMES, 'options');
  const {
    store,
    listeners,
    security,
    host,
    port,
    advertisedHost,
    advertisedPort,
    nodeId,
    topics,
    autoCreateTopics,
    defaultPartitions,
    topicsMax,
    requestBytesMax,
    connectionsMax,
    idleTimeoutMs,
    inFlightRequestsMax,
    pendingResponseBytesMax,
    fetchWaitMsMax,
    closeGraceMs,
    membersNotedMax,
    clock,
    onWarning,
    topicAuthority,
    clusterView,
  } = options;
  if (topicAuthority !== undefined && typeof topicAuthority !== 'function')
    throw new TypeError('options.topicAuthority must be a function');
  if (clusterView !== undefined && typeof clusterView !== 'function')
    throw new TypeError('options.clusterView must be a function');
  if (typeof store !== 'object' || store === null || typeof store.commitOffsets !== 'function')
    throw new TypeError('options.store must be an open OffsetStore');
  const resolved = {
    store,
    listeners: [] as ResolvedListener[],
    security: resolveSecurityOptions(security),
    topicAuthority,
    clusterView,
    host: text(host, 'host') ?? SERVER_DEFAULTS.host,
    port: integer(port, 'port', SERVER_DEFAULTS.port, 0, 65_535),
    advertisedHost: text(advertisedHost, 'advertisedHost'),
    advertisedPort:
      advertisedPort === undefined
        ? undefined
        : integer(advertisedPort, 'advertisedPort', 0, 1, 65_535),
    nodeId: integer(nodeId, 'nodeId', SERVER_DEFAULTS.nodeId, 0, INT32_MAX),
    topics: topicSpecs(topics),
    autoCreateTopics: flag(autoCreateTopics, 'autoCreateTopics', SERVER_DEFAULTS.autoCreateTopics),
    defaultPartitions: integer(
      defaultPartitions,
      'defaultPartitions',
      SERVER_DEFAULTS.defaultPartitions,
      1,
      PARTITION_COUNT_MAX,
    ),
    topicsMax: integer(topicsMax, 'topicsMax', SERVER_DEFAULTS.topicsMax, 1, 1_000_000),
    requestBytesMax: integer(
      requestBytesMax,
      'requestBytesMax',
      SERVER_DEFAULTS.requestBytesMax,
      64,
      INT32_MAX,
    ),
    connectionsMax: integer(
      connectionsMax,
      'connectionsMax',
      SERVER_DEFAULTS.connectionsMax,
      1,
      1_000_000,
    ),
    idleTimeoutMs: integer(
      idleTimeoutMs,
      'idleTimeoutMs',
      SERVER_DEFAULTS.idleTimeoutMs,
      1,
      TIMER_MS_MAX,
    ),
    inFlightRequestsMax: integer(
      inFlightRequestsMax,
      'inFlightRequestsMax',
      SERVER_DEFAULTS.inFlightRequestsMax,
      1,
      65_536,
    ),
    pendingResponseBytesMax: integer(
      pendingResponseBytesMax,
      'pendingResponseBytesMax',
      SERVER_DEFAULTS.pendingResponseBytesMax,
      16 * 1024,
      2 ** 40,
    ),
    fetchWaitMsMax: integer(
      fetchWaitMsMax,
      'fetchWaitMsMax',
      SERVER_DEFAULTS.fetchWaitMsMax,
      0,
      TIMER_MS_MAX,
    ),
    closeGraceMs: integer(
      closeGraceMs,
      'closeGraceMs',
      SERVER_DEFAULTS.closeGraceMs,
      0,
      TIMER_MS_MAX,
    ),
    membersNotedMax: integer(
      membersNotedMax,
      'membersNotedMax',
      SERVER_DEFAULTS.membersNotedMax,
      1,
      10_000_000,
    ),
    clock: serverClock(clock),
    onWarning: warningsTo(onWarning),
  };
  if (listeners !== undefined) {
    if (
      host !== undefined ||
      port !== undefined ||
      advertisedHost !== undefined ||
      advertisedPort !== undefined
    ) {
      throw new TypeError(
        'options.host, port, advertisedHost and advertisedPort cannot be given with options.listeners: give them per listener',
      );
    }
    if (!Array.isArray(listeners) || listeners.length === 0)
      throw new TypeError('options.listeners must be a non-empty array');
    resolved.listeners = listeners.map((l, i) => resolveListener(l, `listeners[${i}]`));
    const names = new Set(resolved.listeners.map((l) => l.name));
    if (names.size !== resolved.listeners.length)
      throw new RangeError(
        'options.listeners: listener names must be unique (two of the same protocol need a name each)',
      );
    return resolved;
  }
  if (resolved.advertisedHost === undefined && WILDCARD_HOSTS.has(resolved.host)) {
    throw new RangeError(
      `options.advertisedHost is required when listening on the wildcard address '${resolved.host}': clients must be told an address they can connect to`,
    );
  }
  if (resolved.advertisedHost === '')
    throw new RangeError('options.advertisedHost must not be empty');
  resolved.listeners = [
    resolveListener(
      {
        host: resolved.host,
        port: resolved.port,
        advertisedHost: resolved.advertisedHost,
        advertisedPort: resolved.advertisedPort,
      },
      'listeners[0]',
    ),
  ];
  return resolved;
}

/** The server's clock: the system's by default; one that is not a Clock is a TypeError. */
function serverClock(clock: Clock | undefined): Clock {
  if (clock === undefined) return new SystemClock();
  checkClock(clock, 'options.clock');
  return clock;
}
