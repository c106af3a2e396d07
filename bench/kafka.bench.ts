/**
 * The Kafka wire-protocol server (`startKafkaServer`) against the same workload through the
 * in-process API, side by side in one run, every store durable ('fsync', default options):
 *
 * - OffsetCommit throughput: 1 and 100 partitions per request, over 1 connection (16 requests
 *   pipelined) and 64 connections (4 pipelined each), each connection committing for its own group;
 *   next to `store.commitOffsets` with as many calls in flight (16 on one group; 256 over 64 groups).
 *   Requests are encoded before timing and sent by a minimal pipelining client in a process of its
 *   own (bench/support/kafka-load.ts), as a real client is: the server's process pays only for the
 *   server's side of each request, and the in-process API's caller for nothing but its calls.
 * - The wire's floor beside each commit shape (bench/support/kafka-echo.ts): the same load against a
 *   server that answers each frame at once, decoding and storing nothing. It prints the ceiling of
 *   the wire / in-process ratio on this machine: R_floor / (R_floor + R_in-process), what a server
 *   whose own work cost nothing would reach (with a fixed number of requests in flight, throughput
 *   is that number over the latency, and the wire adds the floor's round trip to every commit).
 * - OffsetFetch latency: one request at a time on one connection, 1 and 100 partitions (v8),
 *   next to an awaited `store.fetchOffsets` of the same buckets.
 * - The codec's share: decoding each request (header and body) and encoding its response, alone,
 *   per request, to set next to the round trip; for OffsetCommit both the table-driven codec and the
 *   columns the server reads it into when nothing wraps its handler.
 *
 * Expected order of magnitude (fdatasync ~0.3-3 ms; loopback round trip ~30-80 us): commits are
 * bound by fdatasync and group commit, so pipelined wire commits should reach most of the
 * in-process offsets/s at 100 partitions per request (each commit is one batch either way; the wire
 * adds decoding 100 partitions, ~20-60 us, and a response), and less at 1 partition, where the
 * per-request network and codec costs are not hidden behind the bytes written; fetch through the
 * wire ~40-150 us per request (one loopback round trip, a decode, a lookup in memory, an encode)
 * against ~1 us in process.
 * Targets checked at the end: batched (100 partitions) wire commits >= 0.7x in-process offsets/s;
 * wire OffsetFetch p99 < 1 ms on loopback. The commit and fetch measurements are repeated RUNS
 * times, each on fresh stores; tables show the median and [min-max] over the runs, and the targets
 * are judged on the medians (a shared host's noise moves single runs by tens of percent).
 */
import {
  OffsetStore,
  startKafkaServer,
  type KafkaServer,
  type OffsetCommit,
} from '../src/index.js';
import {
  API_KEYS,
  decodeOffsetCommitColumns,
  decodeRequest,
  decodeRequestHeader,
  encodeOffsetCommitResponse,
  encodeRequest,
  encodeResponse,
  type RequestInputOf,
} from '../src/kafka/protocol/index.js';
import { startEchoServer } from './support/kafka-echo.js';
import { KafkaLoad } from './support/kafka-load.js';
import { PipelinedConnection } from './support/kafka-pipeline.js';
import {
  measureInterleaved,
  type MeasureOptions,
  type TaskResult,
  type TaskSpec,
} from './support/measure.js';
import {
  formatCount,
  formatMs,
  formatNs,
  formatRatio,
  printBanner,
  printTable,
  type Column,
  verdict,
} from './support/report.js';
import { atScale } from './support/scale.js';
import { createTempDir, removeTempDir } from './support/temp-dir.js';
import { advance, bucketRefs, groupName, offsetCommits } from './support/workload.js';

const TOPIC = 'bench';
const PARTITIONS = 100;
const VARIANTS = 32;
const TIMING: MeasureOptions = atScale({
  quick: { timeMs: 400, warmupMs: 100, rounds: 1 },
  default: { timeMs: 1500, warmupMs: 300, rounds: 2 },
  full: { timeMs: 6000, warmupMs: 1000, rounds: 4 },
});
/** Whole runs (a fresh store and server each): tables give the median and the range over them. */
const RUNS = atScale({ quick: 1, default: 3, full: 5 });
const CODEC_TIMING: MeasureOptions = atScale({
  quick: { timeMs: 200, warmupMs: 50, rounds: 1 },
  default: { timeMs: 1000, warmupMs: 200, rounds: 2 },
  full: { timeMs: 4000, warmupMs: 500, rounds: 4 },
});

interface Shape {
  readonly connections: number;
  readonly pipelined: number;
  readonly partitions: number;
}

const COMMIT_SHAPES: readonly Shape[] = [
  { connections: 1, pipelined: 16, partitions: 1 },
  { connections: 1, pipelined: 16, partitions: 100 },
  { connections: 64, pipelined: 4, partitions: 1 },
  { connections: 64, pipelined: 4, partitions: 100 },
];

/** A store and a server over it, the topic with 100 partitions (table 1). */
interface Served {
  readonly store: OffsetStore;
  readonly server: KafkaServer;
  close(): Promise<void>;
}

async function serve(label: string): Promise<Served> {
  const dir = createTempDir(label);
  const store = await OffsetStore.open({ dir, durability: 'fsync' });
  const server = await startKafkaServer({
    store,
    topics: [{ name: TOPIC, partitions: PARTITIONS }],
  });
  return {
    store,
    server,
    close: async () => {
      await server.close({ closeStore: true });
      await removeTempDir(dir);
    },
  };
}

function commitRequest(
  groupId: string,
  partitions: number,
  offset: number,
): RequestInputOf<typeof API_KEYS.OffsetCommit> {
  return {
    groupId,
    generationIdOrMemberEpoch: -1,
    memberId: '',
    topics: [
      {
        name: TOPIC,
        partitions: Array.from({ length: partitions }, (_, p) => ({
          partitionIndex: p,
          committedOffset: BigInt(offset),
          committedLeaderEpoch: 0,
          committedMetadata: '',
        })),
      },
    ],
  };
}

/** `VARIANTS` encoded OffsetCommit v8 frames for a group, with increasing offsets. */
function commitFrames(groupId: string, partitions: number): Buffer[] {
  return Array.from({ length: VARIANTS }, (_, v) =>
    encodeRequest(
      { apiKey: API_KEYS.OffsetCommit, apiVersion: 8, correlationId: v, clientId: 'bench' },
      commitRequest(groupId, partitions, 1000 + v),
    ),
  );
}

interface Prepared {
  readonly spec: TaskSpec;
  close(): Promise<void>;
}

/** The commit shape's requests sent by a load-driver process to `port`; `stop` closes the server. */
async function loadDriven(
  shape: Shape,
  port: number,
  name: string,
  stop: () => Promise<void>,
): Promise<Prepared> {
  const frames = Array.from({ length: shape.connections }, (_, c) =>
    commitFrames(groupName(c), shape.partitions),
  );
  const load = await KafkaLoad.start(port, shape.pipelined, frames);
  return {
    spec: {
      name,
      async: true,
      concurrency: shape.connections * shape.pipelined,
      unitsPerCall: shape.partitions,
      fn: () => {
        throw new Error('these requests are sent by the load driver');
      },
      round: (timeMs, warmupMs) => load.round(timeMs, warmupMs),
    },
    close: async () => {
      await load.close();
      await stop();
    },
  };
}

async function wireCommits(shape: Shape): Promise<Prepared> {
  const served = await serve('kafka-wire');
  return loadDriven(
    shape,
    served.server.port,
    `wire OffsetCommit v8, ${shape.partitions} partition(s), ${shape.connections} connection(s) x ${shape.pipelined} pipelined, fsync`,
    () => served.close(),
  );
}

/** The same load against a server that answers each frame at once, decoding nothing (kafka-echo.ts). */
async function echoCommits(shape: Shape): Promise<Prepared> {
  const answer = {
    topicNames: [TOPIC],
    topicCounts: [shape.partitions],
    partitionIndexes: Array.from({ length: shape.partitions }, (_, p) => p),
    errorCodes: new Array<number>(shape.partitions).fill(0),
  };
  const echo = await startEchoServer(encodeOffsetCommitResponse(8, 0, 0, answer));
  return loadDriven(
    shape,
    echo.port,
    'wire floor: the same requests answered at once, nothing decoded or stored',
    () => echo.close(),
  );
}

async function inProcessCommits(shape: Shape): Promise<Prepared> {
  const dir = createTempDir('kafka-api');
  const store = await OffsetStore.open({ dir, durability: 'fsync' });
  const groups = Array.from({ length: shape.connections }, (_, c) => groupName(c));
  const offsets: OffsetCommit[][] = Array.from(
    { length: shape.connections * shape.pipelined },
    () => offsetCommits(shape.partitions, 1000),
  );
  let next = 0;
  return {
    spec: {
      name: `in-process commitOffsets, ${shape.partitions} bucket(s), ${shape.connections} group(s) x ${shape.pipelined} in flight, fsync`,
      async: true,
      concurrency: shape.connections * shape.pipelined,
      unitsPerCall: shape.partitions,
      fn: () => {
        const n = next++;
        return store.commitOffsets(
          groups[n % shape.connections]!,
          advance(offsets[n % offsets.length]!),
        );
      },
    },
    close: async () => {
      await store.close();
      await removeTempDir(dir);
    },
  };
}

interface CommitRow extends TaskResult {
  readonly shape: Shape;
  readonly via: 'wire' | 'in-process' | 'floor';
}

async function measureCommits(): Promise<CommitRow[]> {
  const rows: CommitRow[] = [];
  for (const shape of COMMIT_SHAPES) {
    const prepared = [
      await wireCommits(shape),
      await inProcessCommits(shape),
      await echoCommits(shape),
    ];
    try {
      const [wire, api, floor] = await measureInterleaved(
        prepared.map((p) => p.spec),
        TIMING,
      );
      rows.push(
        { ...wire!, shape, via: 'wire' },
        { ...api!, shape, via: 'in-process' },
        { ...floor!, shape, via: 'floor' },
      );
    } finally {
      for (const p of prepared) await p.close();
    }
  }
  return rows;
}

interface FetchRow extends TaskResult {
  readonly partitions: number;
  readonly via: 'wire' | 'in-process';
}

async function measureFetches(): Promise<FetchRow[]> {
  const served = await serve('kafka-fetch');
  const { store } = served;
  for (let g = 0; g < 64; g++)
    await store.commitOffsets(groupName(g), offsetCommits(PARTITIONS, 5000 + g));
  const connection = await PipelinedConnection.connect(served.server.port);
  const rows: FetchRow[] = [];
  try {
    for (const partitions of [1, 100]) {
      const frames = Array.from({ length: 64 }, (_, g) =>
        encodeRequest(
          { apiKey: API_KEYS.OffsetFetch, apiVersion: 8, correlationId: g, clientId: 'bench' },
          {
            groups: [
              {
                groupId: groupName(g),
                topics: [
                  {
                    name: TOPIC,
                    partitionIndexes: Array.from({ length: partitions }, (_, p) => p),
                  },
                ],
              },
            ],
          },
        ),
      );
      const refs = bucketRefs(partitions);
      let wireNext = 0;
      let apiNext = 0;
      const [wire, api] = await measureInterleaved(
        [
          {
            name: `wire OffsetFetch v8, ${partitions} partition(s), 1 connection, one at a time`,
            async: true,
            unitsPerCall: partitions,
            fn: () => connection.request(frames[wireNext++ % 64]!),
          },
          {
            name: `in-process fetchOffsets, ${partitions} bucket(s), awaited`,
            async: true,
            unitsPerCall: partitions,
            fn: () => store.fetchOffsets(groupName(apiNext++ % 64), refs),
          },
        ],
        TIMING,
      );
      rows.push({ ...wire!, partitions, via: 'wire' }, { ...api!, partitions, via: 'in-process' });
    }
  } finally {
    connection.close();
    await served.close();
  }
  return rows;
}

interface CodecRow extends TaskResult {
  readonly what: string;
}

/** Decoding each request and encoding its response, alone (what the server adds per request besides the socket). */
async function measureCodec(): Promise<CodecRow[]> {
  /** An OffsetCommit v8 request payload (after the size field) of `partitions` partitions. */
  const commitPayload = (partitions: number): Buffer =>
    encodeRequest(
      { apiKey: API_KEYS.OffsetCommit, apiVersion: 8, correlationId: 1, clientId: 'bench' },
      commitRequest('group-000001', partitions, 1234),
    ).subarray(4);
  const commit = (partitions: number) => {
    const payload = commitPayload(partitions);
    const response = {
      topics: [
        {
          name: TOPIC,
          partitions: Array.from({ length: partitions }, (_, p) => ({
            partitionIndex: p,
            errorCode: 0,
          })),
        },
      ],
    };
    return () => {
      decodeRequest(payload);
      encodeResponse({ apiKey: API_KEYS.OffsetCommit, apiVersion: 8, correlationId: 1 }, response);
    };
  };
  /** The server's path for an OffsetCommit: read into columns, answered from them. */
  const commitColumns = (partitions: number) => {
    const payload = commitPayload(partitions);
    return () => {
      const columns = decodeOffsetCommitColumns(payload, decodeRequestHeader(payload))!;
      const answer = {
        topicNames: columns.topicNames,
        topicCounts: columns.topicCounts,
        partitionIndexes: columns.partitionIndexes,
        errorCodes: new Array<number>(columns.partitionIndexes.length).fill(0),
      };
      encodeOffsetCommitResponse(8, 1, 0, answer);
    };
  };
  const fetch = (partitions: number) => {
    const payload = encodeRequest(
      { apiKey: API_KEYS.OffsetFetch, apiVersion: 8, correlationId: 1, clientId: 'bench' },
      {
        groups: [
          {
            groupId: 'group-000001',
            topics: [
              { name: TOPIC, partitionIndexes: Array.from({ length: partitions }, (_, p) => p) },
            ],
          },
        ],
      },
    ).subarray(4);
    const response = {
      groups: [
        {
          groupId: 'group-000001',
          topics: [
            {
              name: TOPIC,
              partitions: Array.from({ length: partitions }, (_, p) => ({
                partitionIndex: p,
                committedOffset: 5000n,
                committedLeaderEpoch: 0,
                metadata: '',
                errorCode: 0,
              })),
            },
          ],
          errorCode: 0,
        },
      ],
    };
    return () => {
      decodeRequest(payload);
      encodeResponse({ apiKey: API_KEYS.OffsetFetch, apiVersion: 8, correlationId: 1 }, response);
    };
  };
  const tasks = [
    { what: 'OffsetCommit v8, 1 partition, table-driven', fn: commit(1) },
    { what: 'OffsetCommit v8, 100 partitions, table-driven', fn: commit(100) },
    { what: 'OffsetCommit v8, 1 partition, columns (the server)', fn: commitColumns(1) },
    { what: 'OffsetCommit v8, 100 partitions, columns (the server)', fn: commitColumns(100) },
    { what: 'OffsetFetch v8, 1 partition', fn: fetch(1) },
    { what: 'OffsetFetch v8, 100 partitions', fn: fetch(100) },
  ];
  const results = await measureInterleaved(
    tasks.map((t) => ({
      name: `decode request + encode response, ${t.what}`,
      async: false,
      fn: t.fn,
    })),
    CODEC_TIMING,
  );
  return results.map((r, i) => ({ ...r, what: tasks[i]!.what }));
}

/** Median and [min-max] of a value over the runs, formatted. */
function spread(values: readonly number[], format: (value: number) => string): string {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = median(sorted);
  return sorted.length === 1
    ? format(middle)
    : `${format(middle)} [${format(sorted[0]!)}-${format(sorted[sorted.length - 1]!)}]`;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length % 2 === 1
    ? sorted[(sorted.length - 1) / 2]!
    : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
}

/** A table column giving spread() of one figure of a task over the runs. */
function spreadColumn<R>(
  header: string,
  figure: (run: R) => number,
  format: (value: number) => string,
): Column<Across<R>> {
  return { header, value: (r) => spread(r.runs.map(figure), format) };
}

/**
 * One task over the runs: its result in each run, and for wire commits, in each run, its ratio to
 * in-process and the ceiling of that ratio the wire floor gives (kafka-echo.ts).
 */
interface Across<R> {
  readonly name: string;
  readonly runs: readonly R[];
  readonly ratios: readonly number[];
  readonly ceilings: readonly number[];
}

/** The ratio to in-process of a server whose own work cost nothing: R_floor / (R_floor + R_in-process). */
function ceiling(api: TaskResult, floor: TaskResult): number {
  return floor.callsPerSec / (floor.callsPerSec + api.callsPerSec);
}

async function main(): Promise<void> {
  printBanner('kafka: the wire-protocol server vs the in-process API', [
    `${RUNS} run(s), each timing ${TIMING.timeMs} ms per task in ${TIMING.rounds} interleaved rounds after ${TIMING.warmupMs} ms warm-up; wire commits sent from a client process of their own, fetches from this process`,
    'figures: median [min-max] over the runs',
  ]);
  const runs: { commits: CommitRow[]; fetches: FetchRow[] }[] = [];
  for (let run = 0; run < RUNS; run++)
    runs.push({ commits: await measureCommits(), fetches: await measureFetches() });
  const codec = await measureCodec();

  const commits: Across<CommitRow>[] = runs[0]!.commits.map((first, i) => ({
    name: first.name,
    runs: runs.map((r) => r.commits[i]!),
    ratios:
      first.via === 'wire'
        ? runs.map((r) => r.commits[i]!.unitsPerSec / r.commits[i + 1]!.unitsPerSec)
        : [],
    ceilings:
      first.via === 'wire' ? runs.map((r) => ceiling(r.commits[i + 1]!, r.commits[i + 2]!)) : [],
  }));
  const fetches: Across<FetchRow>[] = runs[0]!.fetches.map((first, i) => ({
    name: first.name,
    runs: runs.map((r) => r.fetches[i]!),
    ratios: [],
    ceilings: [],
  }));

  printTable(
    'OffsetCommit: offsets/s, latency per request',
    [
      { header: 'task', value: (r: Across<CommitRow>) => r.name },
      spreadColumn('offsets/s', (x: CommitRow) => x.unitsPerSec, formatCount),
      spreadColumn('p50', (x: CommitRow) => x.p50Ms, formatMs),
      spreadColumn('p99', (x: CommitRow) => x.p99Ms, formatMs),
      {
        header: 'wire / in-process',
        value: (r) => (r.ratios.length > 0 ? spread(r.ratios, formatRatio) : ''),
      },
      {
        header: 'ceiling (no-work server)',
        value: (r) => (r.ceilings.length > 0 ? spread(r.ceilings, formatRatio) : ''),
      },
    ],
    commits,
  );
  printTable(
    'OffsetFetch: latency per request, one at a time',
    [
      { header: 'task', value: (r: Across<FetchRow>) => r.name },
      spreadColumn('requests/s', (x: FetchRow) => x.callsPerSec, formatCount),
      spreadColumn('p50', (x: FetchRow) => x.p50Ms, formatMs),
      spreadColumn('p99', (x: FetchRow) => x.p99Ms, formatMs),
    ],
    fetches,
  );
  printTable(
    'Codec alone: decode the request and encode the response',
    [
      { header: 'request', value: (r: CodecRow) => r.what },
      { header: 'per request', value: (r) => formatNs(r.meanMs * 1e6) },
      { header: 'p99', value: (r) => formatMs(r.p99Ms) },
    ],
    codec,
  );

  console.log('\nTargets (medians over the runs)');
  for (const row of commits.filter((r) => r.ratios.length > 0)) {
    const shape = row.runs[0]!.shape;
    const ratio = median(row.ratios);
    const batched = shape.partitions === PARTITIONS;
    console.log(
      `- OffsetCommit, ${shape.partitions} partition(s), ${shape.connections} connection(s): wire ${formatCount(median(row.runs.map((x) => x.unitsPerSec)))} offsets/s = ${formatRatio(ratio)} of in-process${batched ? ` (target >= 0.7: ${verdict(ratio >= 0.7)})` : ''}; a server doing no work of its own would reach about ${formatRatio(median(row.ceilings))}`,
    );
  }
  for (const row of fetches.filter((r) => r.runs[0]!.via === 'wire')) {
    const p99 = median(row.runs.map((x) => x.p99Ms));
    console.log(
      `- OffsetFetch, ${row.runs[0]!.partitions} partition(s), wire p99 ${formatMs(p99)} (target < 1 ms: ${verdict(p99 < 1)})`,
    );
  }
}

await main();
