/**
 * `offset-store serve`: opens the store in --dir and serves it over Kafka's wire protocol until
 * SIGINT or SIGTERM, then closes gracefully (no new connections, requests in flight finish, held
 * Fetches are answered, the store is closed) and exits 0. Prints the address it listens on once it
 * does (`--json`: one line `{"host","port"}`), so a script can start it on port 0 and read the port.
 * Listens on loopback unless told otherwise.
 */
import { OffsetStore } from '../../store.js';
import { startClusterServer } from '../../cluster/index.js';
import { SERVER_DEFAULTS, startKafkaServer, type KafkaServer, type TopicSpec } from '../../kafka/index.js';
import { EXIT, UsageError, integerOption, noPositionals, stringListOption, stringOption, type Command, type CommandContext } from '../command.js';

const DEFAULT_LISTEN = '127.0.0.1:9092';

/** The `serve` command. */
export const serve: Command = {
  words: ['serve'],
  positionals: [],
  summary: "serve the store over Kafka's wire protocol (group coordinator and offsets)",
  description: [
    'Opens the store and serves it to Kafka clients as their group coordinator and offset store:',
    'OffsetCommit, OffsetFetch, the classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup)',
    'and the consumer group protocol (KIP-848), group admin, and the Metadata, ListOffsets and Fetch',
    'answers consumers need (no records are stored: every partition is empty).',
    'Topics are tables of the store (partition p = bucket p), kept in kafka-topics.json in the store',
    'directory; a topic a client asks for is created with --default-partitions unless --no-auto-create.',
    'Prints the address once listening (--json: {"host","port"}); stops on SIGINT or SIGTERM, letting',
    'requests in flight finish (held JoinGroup and SyncGroup requests are answered at once) and closing',
    'the store. See docs/kafka.md.',
    '',
    'With --etcd, the server is one node of a cluster (docs/cluster.md): the offsets live in etcd, the',
    'offsets-buckets are spread over the live nodes, and --dir keeps only this node\'s lock, manifest',
    'and topic catalog. Give every node the same --topic list and --no-auto-create, so that topics',
    'name the same tables everywhere.',
  ].join('\n'),
  options: {
    listen: { type: 'string', valueName: '<host:port>', description: `address to listen on (default ${DEFAULT_LISTEN}; port 0 picks a free one)` },
    advertise: { type: 'string', valueName: '<host:port>', description: 'address clients are told to connect to (default the listening one; required with 0.0.0.0)' },
    topic: { type: 'string', multiple: true, valueName: '<name:partitions>', description: 'a topic to serve, created or grown at start (repeatable)' },
    'default-partitions': { type: 'string', valueName: '<n>', description: `partitions of a topic created when a client asks for it (default ${SERVER_DEFAULTS.defaultPartitions})` },
    'no-auto-create': { type: 'boolean', description: 'do not create topics clients ask for (they get UNKNOWN_TOPIC_OR_PARTITION)' },
    etcd: { type: 'string', valueName: '<urls>', description: 'cluster mode: etcd client URLs, comma-separated' },
    'node-id': { type: 'string', valueName: '<id>', description: 'cluster mode: this node\'s id, unique in the cluster (required with --etcd)' },
    'broker-id': { type: 'string', valueName: '<n>', description: 'cluster mode: Kafka broker id (default the digits ending --node-id)' },
    'bucket-count': { type: 'string', valueName: '<n>', description: 'cluster mode: offsets-buckets of a new cluster (default 16; an existing cluster keeps its own)' },
    'etcd-prefix': { type: 'string', valueName: '<prefix>', description: 'cluster mode: key prefix of the cluster in etcd (default /offset-store/)' },
    'lease-ttl': { type: 'string', valueName: '<seconds>', description: 'cluster mode: lease TTL; failover takes about this long (default 3)' },
  },
  examples: [
    'offset-store serve --dir ./offsets',
    'offset-store serve --dir ./offsets --listen 127.0.0.1:0 --json',
    'offset-store serve --dir ./offsets --listen 0.0.0.0:9092 --advertise kafka-offsets.internal:9092 --topic orders:12',
    'offset-store serve --dir ./n1 --etcd http://127.0.0.1:2379 --node-id n1 --listen 127.0.0.1:9092 --topic orders:12 --no-auto-create',
  ],
  async run(context) {
    noPositionals(context);
    const settings = serveOptions(context);
    const { output } = context;
    const serverOptions = {
      host: settings.listen.host, port: settings.listen.port, topics: settings.topics, autoCreateTopics: settings.autoCreateTopics,
      ...(settings.advertise === undefined ? {} : { advertisedHost: settings.advertise.host, advertisedPort: settings.advertise.port }),
      ...(settings.defaultPartitions === undefined ? {} : { defaultPartitions: settings.defaultPartitions }),
      onWarning: (message: string) => output.warn(message),
    };
    let server: KafkaServer;
    let close: () => Promise<void>;
    const cluster = clusterOptions(context);
    if (cluster !== undefined) {
      const node = await startClusterServer({ ...serverOptions, ...cluster, dir: context.dir });
      server = node.server;
      close = () => node.close();
    } else {
      const store = await OffsetStore.open({ dir: context.dir, onWarning: (message) => output.warn(message) });
      try {
        server = await startKafkaServer({ ...serverOptions, store });
      } catch (error) {
        await store.close();
        throw error;
      }
      close = () => server.close({ closeStore: true });
    }
    const signal = await new Promise<string>((resolve) => {
      const stop = (name: string) => () => resolve(name);
      process.once('SIGINT', stop('SIGINT'));
      process.once('SIGTERM', stop('SIGTERM'));
      if (output.json) {
        output.jsonLine({ host: server.host, port: server.port });
      } else {
        output.line(`Serving ${context.dir}${cluster === undefined ? '' : ` as node ${cluster.nodeId} of the cluster in ${cluster.etcdEndpoints.join(',')}`} over the Kafka protocol on ${formatAddress(server.host, server.port)}; clients bootstrap from ${server.brokers.join(', ')}.`);
        const topics = server.stats().topics;
        output.line(`${topics} ${topics === 1 ? 'topic' : 'topics'} in the catalog. Stop with Ctrl-C (SIGINT) or SIGTERM.`);
      }
    });
    if (!output.json) output.line(`${signal}: closing (requests in flight finish, the store is closed).`);
    await close();
    if (!output.json) output.line('Stopped.');
    return EXIT.OK;
  },
};

/** The cluster-mode options, when --etcd is given. */
function clusterOptions(context: CommandContext) {
  const etcd = stringOption(context, 'etcd');
  const nodeId = stringOption(context, 'node-id');
  if (etcd === undefined) {
    for (const name of ['node-id', 'broker-id', 'bucket-count', 'etcd-prefix', 'lease-ttl']) {
      if (context.values[name] !== undefined) throw new UsageError(`--${name} needs --etcd`);
    }
    return undefined;
  }
  if (nodeId === undefined || !/^[A-Za-z0-9._-]{1,64}$/.test(nodeId)) throw new UsageError('--node-id <id> (1-64 of [A-Za-z0-9._-]) is required with --etcd');
  const digits = /(\d+)$/.exec(nodeId)?.[1];
  const brokerId = integerOption(context, 'broker-id') ?? (digits === undefined ? undefined : Number(digits));
  if (brokerId === undefined || brokerId < 0 || brokerId > 0x7fffffff) throw new UsageError('--broker-id <n> (0 or more) is required when --node-id does not end in digits');
  const bucketCount = integerOption(context, 'bucket-count');
  if (bucketCount !== undefined && bucketCount < 1) throw new UsageError('--bucket-count must be at least 1');
  const leaseTtlSeconds = integerOption(context, 'lease-ttl');
  if (leaseTtlSeconds !== undefined && leaseTtlSeconds < 2) throw new UsageError('--lease-ttl must be at least 2 seconds');
  const etcdEndpoints = etcd.split(',').map((u) => u.trim()).filter((u) => u.length > 0);
  if (etcdEndpoints.some((u) => !/^https?:\/\/[^/]+$/.test(u))) throw new UsageError(`--etcd must be http(s)://host:port URLs, comma-separated, got ${JSON.stringify(etcd)}`);
  const prefix = stringOption(context, 'etcd-prefix');
  return {
    etcdEndpoints, nodeId, brokerId,
    ...(bucketCount === undefined ? {} : { bucketCount }),
    ...(leaseTtlSeconds === undefined ? {} : { leaseTtlSeconds }),
    ...(prefix === undefined ? {} : { prefix }),
  };
}

interface ServeSettings {
  listen: { host: string; port: number };
  advertise: { host: string; port: number } | undefined;
  topics: TopicSpec[];
  defaultPartitions: number | undefined;
  autoCreateTopics: boolean;
}

function serveOptions(context: CommandContext): ServeSettings {
  const listen = parseAddress(stringOption(context, 'listen') ?? DEFAULT_LISTEN, '--listen', 0);
  const advertiseText = stringOption(context, 'advertise');
  const advertise = advertiseText === undefined ? undefined : parseAddress(advertiseText, '--advertise', 1);
  if (advertise === undefined && (listen.host === '0.0.0.0' || listen.host === '::')) {
    throw new UsageError(`--advertise <host:port> is required with --listen ${listen.host}: clients must be told an address they can reach`);
  }
  const defaultPartitions = integerOption(context, 'default-partitions');
  if (defaultPartitions !== undefined && defaultPartitions < 1) throw new UsageError('--default-partitions must be at least 1');
  return {
    listen,
    advertise,
    topics: stringListOption(context, 'topic').map(parseTopic),
    defaultPartitions,
    autoCreateTopics: context.values['no-auto-create'] !== true,
  };
}

/** `host:port` or `[ipv6]:port`. */
function parseAddress(text: string, option: string, portMin: number): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text);
  const port = Number(match?.[3]);
  if (match === null || port < portMin || port > 65_535) {
    throw new UsageError(`${option} must be <host>:<port> (port ${portMin}-65535; IPv6 as [addr]:port), got ${JSON.stringify(text)}`);
  }
  return { host: match[1] ?? match[2]!, port };
}

/** `name:partitions`. */
function parseTopic(text: string): TopicSpec {
  const match = /^(.+):(\d+)$/.exec(text);
  if (match === null || Number(match[2]) < 1) throw new UsageError(`--topic must be <name>:<partitions> (partitions >= 1), got ${JSON.stringify(text)}`);
  return { name: match[1]!, partitions: Number(match[2]) };
}

function formatAddress(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
