/**
 * `offset-store serve`: opens the store in --dir and serves it over Kafka's wire protocol until
 * SIGINT or SIGTERM, then closes gracefully (no new connections, requests in flight finish, held
 * Fetches are answered, the store is closed) and exits 0. Prints the address it listens on once it
 * does (`--json`: one line `{"host","port"}`), so a script can start it on port 0 and read the port.
 * Listens on loopback unless told otherwise.
 */
import { OffsetStore } from '../../store.js';
import { SERVER_DEFAULTS, startKafkaServer, type TopicSpec } from '../../kafka/index.js';
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
  ].join('\n'),
  options: {
    listen: { type: 'string', valueName: '<host:port>', description: `address to listen on (default ${DEFAULT_LISTEN}; port 0 picks a free one)` },
    advertise: { type: 'string', valueName: '<host:port>', description: 'address clients are told to connect to (default the listening one; required with 0.0.0.0)' },
    topic: { type: 'string', multiple: true, valueName: '<name:partitions>', description: 'a topic to serve, created or grown at start (repeatable)' },
    'default-partitions': { type: 'string', valueName: '<n>', description: `partitions of a topic created when a client asks for it (default ${SERVER_DEFAULTS.defaultPartitions})` },
    'no-auto-create': { type: 'boolean', description: 'do not create topics clients ask for (they get UNKNOWN_TOPIC_OR_PARTITION)' },
  },
  examples: [
    'offset-store serve --dir ./offsets',
    'offset-store serve --dir ./offsets --listen 127.0.0.1:0 --json',
    'offset-store serve --dir ./offsets --listen 0.0.0.0:9092 --advertise kafka-offsets.internal:9092 --topic orders:12',
  ],
  async run(context) {
    noPositionals(context);
    const settings = serveOptions(context);
    const { output } = context;
    const store = await OffsetStore.open({ dir: context.dir, onWarning: (message) => output.warn(message) });
    let server;
    try {
      server = await startKafkaServer({
        store, host: settings.listen.host, port: settings.listen.port, topics: settings.topics, autoCreateTopics: settings.autoCreateTopics,
        ...(settings.advertise === undefined ? {} : { advertisedHost: settings.advertise.host, advertisedPort: settings.advertise.port }),
        ...(settings.defaultPartitions === undefined ? {} : { defaultPartitions: settings.defaultPartitions }),
        onWarning: (message) => output.warn(message),
      });
    } catch (error) {
      await store.close();
      throw error;
    }
    const signal = await new Promise<string>((resolve) => {
      const stop = (name: string) => () => resolve(name);
      process.once('SIGINT', stop('SIGINT'));
      process.once('SIGTERM', stop('SIGTERM'));
      if (output.json) {
        output.jsonLine({ host: server.host, port: server.port });
      } else {
        output.line(`Serving ${store.dir} over the Kafka protocol on ${formatAddress(server.host, server.port)}; clients bootstrap from ${server.brokers.join(', ')}.`);
        const topics = server.stats().topics;
        output.line(`${topics} ${topics === 1 ? 'topic' : 'topics'} in the catalog. Stop with Ctrl-C (SIGINT) or SIGTERM.`);
      }
    });
    if (!output.json) output.line(`${signal}: closing (requests in flight finish, the store is closed).`);
    await server.close({ closeStore: true });
    if (!output.json) output.line('Stopped.');
    return EXIT.OK;
  },
};

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
