/**
 * `offset-store serve`: opens the store in --dir and serves it over Kafka's wire protocol until
 * SIGINT or SIGTERM, then closes gracefully (no new connections, requests in flight finish, held
 * Fetches are answered, the store is closed) and exits 0. Prints the address it listens on once it
 * does (`--json`: one line `{"host","port"}`), so a script can start it on port 0 and read the port.
 * Listens on loopback unless told otherwise.
 */
import * as path from 'node:path';
import * as tls from 'node:tls';
import { NodeFileSystem, readNamedFile, realPathOf } from '../../io/index.js';
import { DirectoryLock } from '../../log/index.js';
import { OffsetStoreError, isOffsetStoreError } from '../../errors/index.js';
import { OffsetStore } from '../../store.js';
import { holds } from '../../store-backup.js';
import { SystemClock, TIMER_MS_MAX } from '../../util/index.js';
import { formatBytes, formatDuration } from '../output.js';
import { ScheduledBackups } from '../scheduled-backups.js';
import { LEASE_TTL_SECONDS_MAX, startClusterServer } from '../../cluster/index.js';
import {
  SASL_MECHANISMS,
  SERVER_DEFAULTS,
  caCertificatesProblem,
  parseListenerAddress,
  startKafkaServer,
  type KafkaServer,
  type ListenerOptions,
  type SaslMechanism,
  type SecurityOptions,
  type SecurityProtocol,
  type TopicSpec,
} from '../../kafka/index.js';
import { PARTITION_COUNT_MAX, topicNameProblem } from '../../kafka/catalog/index.js';
import {
  EXIT,
  UsageError,
  etcdEndpointsOption,
  integerOption,
  noPositionals,
  stringListOption,
  stringOption,
  type Command,
  type CommandContext,
} from '../command.js';

const DEFAULT_LISTEN = '127.0.0.1:9092';
const BACKUP_EVERY_DEFAULT = '1h';
const BACKUP_KEEP_DEFAULT = 7;
/** A broker id is an int32 on the wire. */
const BROKER_ID_MAX = 0x7fffffff;

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
    'Prints the address once listening (--json: {"host","port","listeners"}); stops on SIGINT or SIGTERM,',
    'letting requests in flight finish (held JoinGroup and SyncGroup requests are answered at once) and',
    'closing the store; re-reads users and ACLs on SIGHUP. Listeners may use TLS and SASL, and an',
    'authorizer may enforce ACLs. See docs/kafka.md and docs/security.md.',
    '',
    'With --etcd, the server is one node of a cluster (docs/cluster.md): the offsets live in etcd, the',
    "offsets-buckets are spread over the live nodes, and --dir keeps only this node's lock, manifest",
    "and a copy of the cluster's topic catalog, kept in etcd: a node serves every topic of the cluster,",
    'and its --topic list adds topics (or partitions) there for all nodes; so do the topics clients',
    'ask for, with --auto-create.',
    '',
    'With --backup-dir, the store is backed up while it serves (commits go on): every --backup-every, and',
    'on SIGUSR2, into <dir>/offsets-<UTC time>, a store that opens (or serves) like any other; the newest',
    '--backup-keep are kept. On a full backup disk, the oldest are removed to make room (never the newest,',
    'and only while removing them can). See the backup command.',
  ].join('\n'),
  options: {
    'offsets-retention': {
      type: 'string',
      valueName: '<n>{s,m,h,d}',
      description:
        "how long an offset of a group without members is kept after its commit (default 7d, the store's offsetsRetentionMs): give the retention of the service that opens the store, or its older offsets expire while this serves",
    },
    'offsets-retention-check-interval-ms': {
      type: 'string',
      valueName: '<ms>',
      description: 'how often expired offsets are looked for (default 60000)',
    },
    strategy: {
      type: 'string',
      valueName: '<path>',
      description:
        "the compaction strategy module of a store compacted by one (the module's path; without it such a store is not compacted)",
    },
    listen: {
      type: 'string',
      multiple: true,
      valueName: '<[PROTOCOL://]host:port>',
      description: `listener (repeatable): PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL; host:port alone is PLAINTEXT (default ${DEFAULT_LISTEN}; port 0 picks a free one)`,
    },
    advertise: {
      type: 'string',
      multiple: true,
      valueName: '<[PROTOCOL://]host:port>',
      description:
        'address clients of a listener are told (repeatable, matched by protocol; host:port alone: the first listener; required with 0.0.0.0)',
    },
    'tls-cert': {
      type: 'string',
      valueName: '<file>',
      description: 'PEM certificate chain of SSL and SASL_SSL listeners',
    },
    'tls-key': {
      type: 'string',
      valueName: '<file>',
      description: 'PEM private key of SSL and SASL_SSL listeners',
    },
    'tls-ca': {
      type: 'string',
      valueName: '<file>',
      description: 'PEM CA certificates that sign client certificates',
    },
    'tls-client-auth': {
      type: 'string',
      valueName: '<none|requested|required>',
      description:
        'client certificates: none, requested (verified when given) or required (default none; requested with --tls-ca)',
    },
    'sasl-mechanism': {
      type: 'string',
      multiple: true,
      valueName: '<mechanism>',
      description: `SASL mechanisms of SASL_* listeners (repeatable; ${SASL_MECHANISMS.join(', ')}; default all, PLAIN on SASL_SSL only)`,
    },
    'allow-plain-without-tls': {
      type: 'boolean',
      description: 'allow PLAIN on SASL_PLAINTEXT (passwords cross the network in clear)',
    },
    authorizer: {
      type: 'boolean',
      description:
        'enforce the ACLs of offset-store acls (without it every client may do everything)',
    },
    'super-user': {
      type: 'string',
      multiple: true,
      valueName: '<User:name>',
      description: 'principal allowed everything (repeatable)',
    },
    'allow-everyone-if-no-acl-found': {
      type: 'boolean',
      description: 'allow what a resource without any ACL is asked (default: refuse)',
    },
    'audit-log': {
      type: 'string',
      valueName: '<file>',
      description: 'append a JSON line per denied or administrative request to this file',
    },
    'connections-per-address-max': {
      type: 'string',
      valueName: '<n>',
      description: 'connections one client address may hold open (default 100)',
    },
    topic: {
      type: 'string',
      multiple: true,
      valueName: '<name:partitions>',
      description: 'a topic to serve, created or grown at start (repeatable)',
    },
    'default-partitions': {
      type: 'string',
      valueName: '<n>',
      description: `partitions of a topic created when a client asks for it (default ${SERVER_DEFAULTS.defaultPartitions})`,
    },
    'no-auto-create': {
      type: 'boolean',
      description: 'do not create topics clients ask for (they get UNKNOWN_TOPIC_OR_PARTITION)',
    },
    'auto-create': {
      type: 'boolean',
      description:
        "cluster mode: create topics clients ask for, in the cluster's catalog (off with --etcd unless given: each round of new topics writes the whole catalog to etcd)",
    },
    etcd: {
      type: 'string',
      valueName: '<urls>',
      description: 'cluster mode: etcd client URLs, comma-separated',
    },
    'node-id': {
      type: 'string',
      valueName: '<id>',
      description: "cluster mode: this node's id, unique in the cluster (required with --etcd)",
    },
    'broker-id': {
      type: 'string',
      valueName: '<n>',
      description: 'cluster mode: Kafka broker id (default the digits ending --node-id)',
    },
    'bucket-count': {
      type: 'string',
      valueName: '<n>',
      description:
        'cluster mode: offsets-buckets of a new cluster (default 16; an existing cluster keeps its own)',
    },
    'etcd-prefix': {
      type: 'string',
      valueName: '<prefix>',
      description: 'cluster mode: key prefix of the cluster in etcd (default /offset-store/)',
    },
    'lease-ttl': {
      type: 'string',
      valueName: '<seconds>',
      description: 'cluster mode: lease TTL, 2 to 3600; failover takes about this long (default 3)',
    },
    'backup-dir': {
      type: 'string',
      valueName: '<dir>',
      description:
        'back the store up while serving, into new folders of <dir> named after the time (also on SIGUSR2)',
    },
    'backup-every': {
      type: 'string',
      valueName: '<duration>',
      description: `time between backups: <n>s, <n>m, <n>h or <n>d (default ${BACKUP_EVERY_DEFAULT}; 0: only on SIGUSR2)`,
    },
    'backup-keep': {
      type: 'string',
      valueName: '<n>',
      description: `backups kept, the newest (default ${BACKUP_KEEP_DEFAULT}; 0 keeps all)`,
    },
  },
  examples: [
    'offset-store serve --dir ./offsets',
    'offset-store serve --dir ./offsets --listen 127.0.0.1:0 --json',
    'offset-store serve --dir ./offsets --listen 0.0.0.0:9092 --advertise kafka-offsets.internal:9092 --topic orders:12',
    'offset-store serve --dir ./offsets --listen PLAINTEXT://127.0.0.1:9092 --listen SASL_SSL://127.0.0.1:9093 --tls-cert server.pem --tls-key server.key --authorizer --super-user User:admin',
    'offset-store serve --dir ./offsets --backup-dir /backups/offsets --backup-every 6h --backup-keep 28',
    'offset-store serve --dir ./n1 --etcd http://127.0.0.1:2379 --node-id n1 --listen 127.0.0.1:9092 --topic orders:12 --no-auto-create',
  ],
  async run(context) {
    noPositionals(context);
    const settings = await serveOptions(context);
    const { output } = context;
    const serverOptions = {
      listeners: settings.listeners,
      security: settings.security,
      topics: settings.topics,
      autoCreateTopics: settings.autoCreateTopics,
      ...(settings.defaultPartitions === undefined
        ? {}
        : { defaultPartitions: settings.defaultPartitions }),
      onWarning: (message: string) => output.warn(message),
    };
    let server: KafkaServer;
    let close: () => Promise<void>;
    let schedule: ScheduledBackups | undefined;
    let backupLock: DirectoryLock | undefined;
    const cluster = clusterOptions(context);
    const backups = backupOptions(context, cluster !== undefined);
    const retentionMs = retentionOption(context);
    const retentionCheckMs = integerOption(context, 'offsets-retention-check-interval-ms', {
      range: [1, TIMER_MS_MAX],
    });
    const retention = {
      ...(retentionMs === undefined ? {} : { offsetsRetentionMs: retentionMs }),
      ...(retentionCheckMs === undefined
        ? {}
        : { offsetsRetentionCheckIntervalMs: retentionCheckMs }),
    };
    if (cluster !== undefined) {
      const node = await startClusterServer({
        ...serverOptions,
        ...cluster,
        ...retention,
        dir: context.dir,
      }).catch((error: unknown) => {
        if (error instanceof RangeError) throw new UsageError(error.message);
        throw error;
      });
      server = node.server;
      close = () => node.close();
    } else {
      const strategy = stringOption(context, 'strategy');
      const store = await OffsetStore.open({
        dir: context.dir,
        onWarning: (message) => output.warn(message),
        ...(strategy === undefined ? {} : { compaction: { strategy } }),
        ...retention,
      });
      try {
        server = await startKafkaServer({ ...serverOptions, store });
      } catch (error) {
        await store.close();
        // An option out of its range (a partition count, a limit) is the command line's mistake.
        if (error instanceof RangeError) throw new UsageError(error.message);
        throw error;
      }
      if (backups !== undefined) {
        try {
          backupLock = await lockBackupDir(backups.dir);
        } catch (error) {
          await server.close({ closeStore: true });
          throw error;
        }
        schedule = new ScheduledBackups({
          store,
          ...backups,
          clock: new SystemClock(),
          fs: new NodeFileSystem(),
          onBackup: (report, removed) =>
            output.json
              ? output.jsonLine({ event: 'backup', ...report, removed })
              : output.line(
                  `Backed up to ${report.dir} (${report.segments} segments, ${formatBytes(report.bytes)}) in ${formatDuration(report.durationMs)}${removed.length === 0 ? '' : `; removed ${removed.length} older`}.`,
                ),
          onProblem: (message) => output.warn(message),
        });
      }
      close = async () => {
        schedule?.close();
        try {
          await server.close({ closeStore: true });
        } finally {
          await backupLock?.release();
        }
      };
    }
    const backupNow = () => void schedule?.now();
    if (schedule !== undefined) process.on('SIGUSR2', backupNow);
    const running = server;
    const reload = () => {
      running.reloadSecurity().then(
        () =>
          output.json
            ? output.jsonLine({ event: 'reloaded' })
            : output.line('SIGHUP: users and ACLs re-read.'),
        (error: unknown) =>
          output.warn(
            `SIGHUP: users and ACLs not re-read, the previous ones stay: ${error instanceof Error ? error.message : String(error)}`,
          ),
      );
    };
    process.on('SIGHUP', reload);
    const signal = await new Promise<string>((resolve) => {
      const stop = (name: string) => () => resolve(name);
      process.once('SIGINT', stop('SIGINT'));
      process.once('SIGTERM', stop('SIGTERM'));
      if (output.json) {
        output.jsonLine({
          host: server.host,
          port: server.port,
          listeners: server.listeners.map((l) => ({
            name: l.name,
            securityProtocol: l.securityProtocol,
            host: l.host,
            port: l.port,
          })),
        });
      } else {
        for (const l of server.listeners) {
          output.line(
            `Serving ${context.dir}${cluster === undefined ? '' : ` as node ${cluster.nodeId} of the cluster in ${cluster.etcdEndpoints.join(',')}`} over the Kafka protocol on ${l.securityProtocol === 'PLAINTEXT' ? '' : `${l.securityProtocol}://`}${formatAddress(l.host, l.port)}; clients bootstrap from ${l.brokers.join(', ')}.`,
          );
        }
        const topics = server.stats().topics;
        output.line(
          `${topics} ${topics === 1 ? 'topic' : 'topics'} in the catalog. Stop with Ctrl-C (SIGINT) or SIGTERM.`,
        );
      }
    });
    process.off('SIGHUP', reload);
    process.off('SIGUSR2', backupNow);
    if (!output.json)
      output.line(`${signal}: closing (requests in flight finish, the store is closed).`);
    await close();
    if (!output.json) output.line('Stopped.');
    return EXIT.OK;
  },
};

/**
 * Holds `--backup-dir` for as long as the server runs (a LOCK file in it, and the kernel's lock): a
 * second serve given the same folder is refused, rather than have two schedules prune one folder.
 */
async function lockBackupDir(dir: string): Promise<DirectoryLock> {
  const fs = new NodeFileSystem();
  await fs.mkdir(dir);
  try {
    return await DirectoryLock.acquire(fs, dir);
  } catch (error) {
    if (!isOffsetStoreError(error, 'STORE_LOCKED')) throw error;
    throw new OffsetStoreError(
      'STORE_LOCKED',
      `--backup-dir ${dir} is in use by another offset-store serve (${error.message}): give each served store a folder of its own`,
    );
  }
}

/** --backup-dir and its companions, checked; undefined without --backup-dir. */
function backupOptions(
  context: CommandContext,
  clustered: boolean,
): { dir: string; everyMs: number; keep: number } | undefined {
  const dir = stringOption(context, 'backup-dir');
  if (dir === undefined) {
    for (const name of ['backup-every', 'backup-keep'])
      if (context.values[name] !== undefined) throw new UsageError(`--${name} needs --backup-dir`);
    return undefined;
  }
  if (clustered)
    throw new UsageError(
      '--backup-dir does not apply with --etcd: the offsets of a cluster live in etcd (back etcd up)',
    );
  if (dir.length === 0) throw new UsageError('--backup-dir needs a directory');
  const backups = path.resolve(dir);
  const store = path.resolve(context.dir);
  if (holds(store, backups) || holds(backups, store))
    throw new UsageError(
      `--backup-dir ${backups} and the store's --dir ${store}: one would hold the other`,
    );
  // Also once symbolic links are resolved, as every backup checks: refused now, not at each backup.
  const [realBackups, realStore] = [realPathOf(backups), realPathOf(store)];
  if (holds(realStore, realBackups) || holds(realBackups, realStore))
    throw new UsageError(
      `--backup-dir ${backups} and the store's --dir ${store}: one would hold the other once links are resolved (${realBackups}, ${realStore})`,
    );
  const every = stringOption(context, 'backup-every') ?? BACKUP_EVERY_DEFAULT;
  const everyMs = parseDuration(every);
  if (everyMs === undefined)
    throw new UsageError(
      `--backup-every must be 0 or <n>s, <n>m, <n>h or <n>d (from 1s to 24d), got ${JSON.stringify(every)}`,
    );
  const keep = integerOption(context, 'backup-keep') ?? BACKUP_KEEP_DEFAULT;
  return { dir, everyMs, keep };
}

/** Milliseconds in a unit of the durations the options take (`<n>s`, `<n>m`, `<n>h`, `<n>d`). */
const UNIT_MS: Readonly<Record<string, number>> = {
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/** The ms of a `<digits><unit>` match of a duration option (UNIT_MS). */
function durationMs(match: RegExpExecArray): number {
  return Number(match[1]) * UNIT_MS[match[2]!]!;
}

/** `0`, or `<n>s|m|h|d` with n >= 1, in ms; undefined when it is neither (or beyond ~24 days). */
function parseDuration(text: string): number | undefined {
  if (text === '0') return 0;
  const match = /^(\d{1,6})([smhd])$/.exec(text);
  if (match === null || Number(match[1]) < 1) return undefined;
  const ms = durationMs(match);
  // Beyond a timer's range (2^31-1 ms), Node fires it at once.
  return ms <= TIMER_MS_MAX ? ms : undefined;
}

/** `--offsets-retention` in ms (`<n>s|m|h|d`, up to 100 years). */
function retentionOption(context: CommandContext): number | undefined {
  const text = stringOption(context, 'offsets-retention');
  if (text === undefined) return undefined;
  const match = /^(\d{1,8})([smhd])$/.exec(text);
  const ms = match === null ? undefined : durationMs(match);
  if (ms === undefined || ms < 1000 || ms > 36_500 * 86_400_000)
    throw new UsageError(
      `--offsets-retention must be <n>s, <n>m, <n>h or <n>d, from 1s to 36500d, got ${JSON.stringify(text)}`,
    );
  return ms;
}

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
  if (context.values.strategy !== undefined)
    throw new UsageError(
      '--strategy does not apply with --etcd: a cluster compacts by checkpoints in etcd',
    );
  if (nodeId === undefined || !/^[A-Za-z0-9._-]{1,64}$/.test(nodeId))
    throw new UsageError('--node-id <id> (1-64 of [A-Za-z0-9._-]) is required with --etcd');
  const digits = /(\d+)$/.exec(nodeId)?.[1];
  const brokerId =
    integerOption(context, 'broker-id', { range: [0, BROKER_ID_MAX] }) ??
    (digits === undefined ? undefined : Number(digits));
  if (brokerId === undefined || brokerId > BROKER_ID_MAX)
    throw new UsageError(
      `--broker-id <n> (0 to ${BROKER_ID_MAX}) is required when --node-id does not end in digits, or ends in a number over ${BROKER_ID_MAX}`,
    );
  const bucketCount = integerOption(context, 'bucket-count', { min: 1 });
  const leaseTtlSeconds = integerOption(context, 'lease-ttl', {
    range: [2, LEASE_TTL_SECONDS_MAX],
  });
  const etcdEndpoints = etcdEndpointsOption(context)!;
  const prefix = stringOption(context, 'etcd-prefix');
  return {
    etcdEndpoints,
    nodeId,
    brokerId,
    ...(bucketCount === undefined ? {} : { bucketCount }),
    ...(leaseTtlSeconds === undefined ? {} : { leaseTtlSeconds }),
    ...(prefix === undefined ? {} : { prefix }),
  };
}

interface ServeSettings {
  listeners: ListenerOptions[];
  security: SecurityOptions;
  topics: TopicSpec[];
  defaultPartitions: number | undefined;
  autoCreateTopics: boolean;
}

/** Most bytes of a certificate, key or CA file (a long chain of certificates takes tens of KB). */
const PEM_FILE_BYTES_MAX = 16 * 1024 * 1024;

async function readPem(file: string | undefined, option: string): Promise<Buffer | undefined> {
  if (file === undefined) return undefined;
  let bytes: Buffer | null;
  try {
    bytes = await readNamedFile(file, PEM_FILE_BYTES_MAX);
  } catch (error) {
    throw new UsageError(`${option}: cannot read ${file}: ${(error as Error).message}`);
  }
  if (bytes === null) throw new UsageError(`${option}: no file ${file}`);
  return bytes;
}

/** Options that only a TLS listener uses, and only a SASL one. */
const TLS_OPTIONS = ['tls-cert', 'tls-key', 'tls-ca', 'tls-client-auth'] as const;
const SASL_OPTIONS = ['sasl-mechanism', 'allow-plain-without-tls'] as const;

/**
 * Refuses TLS or SASL options given without a listener that uses them: an operator who wrote
 * `--listen host:port` (plaintext) with `--tls-cert` and `--tls-client-auth required` would
 * otherwise believe TLS is on.
 */
function checkUnusedOptions(context: CommandContext, protocols: readonly SecurityProtocol[]): void {
  const given = (name: string) =>
    context.values[name] !== undefined && context.values[name] !== false;
  const tls = protocols.some((p) => p === 'SSL' || p === 'SASL_SSL');
  const sasl = protocols.some((p) => p === 'SASL_PLAINTEXT' || p === 'SASL_SSL');
  const unusedTls = TLS_OPTIONS.find((name) => given(name) && !tls);
  if (unusedTls !== undefined)
    throw new UsageError(
      `--${unusedTls} needs an SSL or SASL_SSL listener (--listen SSL://<host>:<port>); every listener given is without TLS`,
    );
  const unusedSasl = SASL_OPTIONS.find((name) => given(name) && !sasl);
  if (unusedSasl !== undefined)
    throw new UsageError(
      `--${unusedSasl} needs a SASL_PLAINTEXT or SASL_SSL listener (--listen SASL_SSL://<host>:<port>); every listener given is without SASL`,
    );
}

/** Refuses a certificate, key or CA that TLS cannot use, naming the options (not at the first connection). */
function checkTlsMaterial(cert: Buffer, key: Buffer, ca: Buffer | undefined): void {
  const caProblem = ca === undefined ? null : caCertificatesProblem(ca);
  if (caProblem !== null) throw new UsageError(`--tls-ca: the file ${caProblem}`);
  try {
    tls.createSecureContext({ cert, key, ...(ca === undefined ? {} : { ca }) });
  } catch (error) {
    throw new UsageError(
      `--tls-cert, --tls-key${ca === undefined ? '' : ', --tls-ca'}: not a usable PEM certificate and key: ${(error as Error).message}`,
    );
  }
}

async function serveOptions(context: CommandContext): Promise<ServeSettings> {
  const listenTexts = stringListOption(context, 'listen');
  const listens = (listenTexts.length === 0 ? [DEFAULT_LISTEN] : listenTexts).map((text) => {
    const parsed = parseListenerAddress(text);
    if (parsed === null)
      throw new UsageError(
        `--listen must be [PROTOCOL://]<host>:<port> (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL; port 0-65535; IPv6 as [addr]:port), got ${JSON.stringify(text)}`,
      );
    return parsed;
  });
  if (new Set(listens.map((l) => l.securityProtocol)).size !== listens.length)
    throw new UsageError('--listen: at most one listener per protocol');
  const advertised = new Map<SecurityProtocol, { host: string; port: number }>();
  for (const text of stringListOption(context, 'advertise')) {
    const parsed = text.includes('://')
      ? parseListenerAddress(text)
      : { ...parseAddress(text, '--advertise', 1), securityProtocol: listens[0]!.securityProtocol };
    if (parsed === null || parsed.port < 1)
      throw new UsageError(
        `--advertise must be [PROTOCOL://]<host>:<port>, got ${JSON.stringify(text)}`,
      );
    if (!listens.some((l) => l.securityProtocol === parsed.securityProtocol))
      throw new UsageError(`--advertise ${text}: no ${parsed.securityProtocol} listener`);
    advertised.set(parsed.securityProtocol, parsed);
  }
  checkUnusedOptions(
    context,
    listens.map((l) => l.securityProtocol),
  );
  const cert = await readPem(stringOption(context, 'tls-cert'), '--tls-cert');
  const key = await readPem(stringOption(context, 'tls-key'), '--tls-key');
  const ca = await readPem(stringOption(context, 'tls-ca'), '--tls-ca');
  const clientAuth =
    stringOption(context, 'tls-client-auth') ?? (ca === undefined ? 'none' : 'requested');
  if (!['none', 'requested', 'required'].includes(clientAuth))
    throw new UsageError(
      `--tls-client-auth must be none, requested or required, got ${JSON.stringify(clientAuth)}`,
    );
  if (clientAuth !== 'none' && ca === undefined)
    throw new UsageError('--tls-client-auth requested or required needs --tls-ca');
  if (cert !== undefined && key !== undefined) checkTlsMaterial(cert, key, ca);
  const mechanisms = stringListOption(context, 'sasl-mechanism').map((m) => {
    const upper = m.toUpperCase() as SaslMechanism;
    if (!SASL_MECHANISMS.includes(upper))
      throw new UsageError(
        `--sasl-mechanism must be one of ${SASL_MECHANISMS.join(', ')}, got ${JSON.stringify(m)}`,
      );
    return upper;
  });
  const allowPlainWithoutTls = context.values['allow-plain-without-tls'] === true;
  const listeners = listens.map(({ securityProtocol, host, port }): ListenerOptions => {
    const advertise = advertised.get(securityProtocol);
    if (advertise === undefined && (host === '0.0.0.0' || host === '::')) {
      throw new UsageError(
        `--advertise is required with --listen on ${host}: clients must be told an address they can reach`,
      );
    }
    const usesTls = securityProtocol === 'SSL' || securityProtocol === 'SASL_SSL';
    const usesSasl = securityProtocol === 'SASL_PLAINTEXT' || securityProtocol === 'SASL_SSL';
    if (usesTls && (cert === undefined || key === undefined))
      throw new UsageError(`a ${securityProtocol} listener needs --tls-cert and --tls-key`);
    const plainAllowed = securityProtocol === 'SASL_SSL' || allowPlainWithoutTls;
    const saslMechanisms =
      mechanisms.length === 0 ? undefined : mechanisms.filter((m) => m !== 'PLAIN' || plainAllowed);
    if (usesSasl && saslMechanisms !== undefined && saslMechanisms.length === 0)
      throw new UsageError(
        `the ${securityProtocol} listener is left with no SASL mechanism (PLAIN needs TLS or --allow-plain-without-tls)`,
      );
    return {
      securityProtocol,
      host,
      port,
      ...(advertise === undefined
        ? {}
        : { advertisedHost: advertise.host, advertisedPort: advertise.port }),
      ...(usesTls
        ? {
            tls: {
              cert: cert!,
              key: key!,
              ...(ca === undefined ? {} : { ca }),
              requireClientCertificate: clientAuth === 'required',
            },
          }
        : {}),
      ...(usesSasl && saslMechanisms !== undefined ? { saslMechanisms } : {}),
      ...(usesSasl ? { allowPlainWithoutTls } : {}),
    };
  });
  const superUsers = stringListOption(context, 'super-user');
  for (const u of superUsers)
    if (!/^User:.+$/.test(u))
      throw new UsageError(`--super-user must be User:<name>, got ${JSON.stringify(u)}`);
  const authorizer = context.values.authorizer === true;
  if (
    !authorizer &&
    (superUsers.length > 0 || context.values['allow-everyone-if-no-acl-found'] === true)
  )
    throw new UsageError('--super-user and --allow-everyone-if-no-acl-found need --authorizer');
  const connectionsPerAddressMax = integerOption(context, 'connections-per-address-max', {
    min: 1,
  });
  const auditLogFile = stringOption(context, 'audit-log');
  const security: SecurityOptions = {
    ...(authorizer
      ? {
          authorizer: {
            superUsers,
            allowEveryoneIfNoAclFound: context.values['allow-everyone-if-no-acl-found'] === true,
          },
        }
      : {}),
    ...(auditLogFile === undefined ? {} : { auditLogFile }),
    ...(connectionsPerAddressMax === undefined ? {} : { connectionsPerAddressMax }),
  };
  const defaultPartitions = integerOption(context, 'default-partitions', {
    range: [1, PARTITION_COUNT_MAX],
  });
  return {
    listeners,
    security,
    topics: stringListOption(context, 'topic').map(parseTopic),
    defaultPartitions,
    autoCreateTopics: autoCreateOption(context),
  };
}

/**
 * Whether clients' topics are created: unless --no-auto-create on a single server, only with
 * --auto-create in a cluster (docs/cluster.md, "Topics": a hostile client creating topic after topic
 * would have etcd keep one version of the whole catalog per creation).
 */
function autoCreateOption(context: CommandContext): boolean {
  const on = context.values['auto-create'] === true;
  const off = context.values['no-auto-create'] === true;
  if (on && off) throw new UsageError('--auto-create and --no-auto-create contradict each other');
  if (context.values.etcd === undefined) {
    if (on)
      throw new UsageError(
        '--auto-create needs --etcd (a single server creates topics unless --no-auto-create)',
      );
    return !off;
  }
  return on;
}

/** `host:port` or `[ipv6]:port`. */
function parseAddress(
  text: string,
  option: string,
  portMin: number,
): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text);
  const port = Number(match?.[3]);
  if (match === null || port < portMin || port > 65_535) {
    throw new UsageError(
      `${option} must be <host>:<port> (port ${portMin}-65535; IPv6 as [addr]:port), got ${JSON.stringify(text)}`,
    );
  }
  return { host: match[1] ?? match[2]!, port };
}

/** `name:partitions`. */
function parseTopic(text: string): TopicSpec {
  const match = /^(.+):(\d+)$/.exec(text);
  const partitions = Number(match?.[2]);
  if (match === null || partitions < 1 || partitions > PARTITION_COUNT_MAX)
    throw new UsageError(
      `--topic must be <name>:<partitions> (partitions from 1 to ${PARTITION_COUNT_MAX}), got ${JSON.stringify(text)}`,
    );
  // Checked here, before the store is opened: a name the catalog refuses is the command line's mistake.
  const problem = topicNameProblem(match[1]!);
  if (problem !== null) throw new UsageError(`--topic ${JSON.stringify(text)}: ${problem}`);
  return { name: match[1]!, partitions };
}

function formatAddress(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
