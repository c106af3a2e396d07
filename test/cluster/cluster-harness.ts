/**
 * A cluster of `offset-store serve --etcd` processes for fault tests, and committers that speak the
 * Kafka protocol to it the way a client does: find the group's coordinator, OffsetCommit there,
 * and on NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or REQUEST_TIMED_OUT find it again and retry.
 * Each committer records what was acknowledged, and after each acknowledged commit fetches the
 * offset back from the coordinator and records a stale read if it sees less.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import {
  ClusterKeys,
  EtcdConnection,
  clusterStatus,
  type ClusterStatus,
} from '../../src/cluster/index.js';
import { loadChecksum, readBatchHeader, xxh32 } from '../../src/codec/index.js';
import { API_KEYS, KAFKA_ERROR } from '../../src/kafka/protocol/index.js';
import { RawKafkaClient } from '../kafka/support/raw-kafka-client.js';

const REPO = path.resolve(import.meta.dirname, '../..');
export const TOPIC = 'orders';
export const BUCKET_COUNT = 16;

/** One `serve --etcd` process. */
export interface NodeProcess {
  nodeId: string;
  port: number;
  child: ChildProcess;
  stderr: string[];
}

/** Starts node `nodeId` as a child process and resolves once it listens. */
export async function startNode(
  nodeId: string,
  endpoints: readonly string[],
  prefix: string,
  dir: string,
  leaseTtlSeconds = 2,
): Promise<NodeProcess> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      path.join(REPO, 'src/cli/main.ts'),
      'serve',
      '--dir',
      dir,
      '--etcd',
      endpoints.join(','),
      '--node-id',
      nodeId,
      '--listen',
      '127.0.0.1:0',
      '--json',
      '--topic',
      `${TOPIC}:8`,
      '--no-auto-create',
      '--lease-ttl',
      String(leaseTtlSeconds),
      '--etcd-prefix',
      prefix,
      '--bucket-count',
      String(BUCKET_COUNT),
    ],
    { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const stderr: string[] = [];
  child.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  const line = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', resolve);
    child.once('exit', (code) =>
      reject(new Error(`node ${nodeId} exited (${code}) before listening: ${stderr.join('')}`)),
    );
  });
  return { nodeId, port: (JSON.parse(line) as { port: number }).port, child, stderr };
}

/** Stops a node process (SIGCONT first, in case it is stopped) and waits for it to exit. */
export async function stopNode(
  node: NodeProcess,
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<void> {
  if (node.child.exitCode !== null || node.child.signalCode !== null) return;
  const exited = new Promise((resolve) => node.child.once('exit', resolve));
  node.child.kill('SIGCONT');
  node.child.kill(signal);
  const timer = setTimeout(() => node.child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** A temporary directory per node. */
export function nodeDirs(count: number): { dirs: string[]; remove: () => void } {
  const root = mkdtempSync(path.join(tmpdir(), 'offset-store-nodes-'));
  return {
    dirs: Array.from({ length: count }, (_, i) => path.join(root, `n${i + 1}`)),
    remove: () => rmSync(root, { recursive: true, force: true }),
  };
}

/** The offsets-bucket of a group (as the store computes it). */
export async function bucketOf(groupId: string): Promise<number> {
  await loadChecksum();
  return xxh32(Buffer.from(groupId, 'utf8')) % BUCKET_COUNT;
}

/** The cluster's state from etcd. */
export async function status(endpoints: readonly string[], prefix: string): Promise<ClusterStatus> {
  const connection = new EtcdConnection({ endpoints });
  try {
    return await clusterStatus(connection, new ClusterKeys(prefix));
  } finally {
    connection.close();
  }
}

/** Waits until every bucket is owned by the node it is placed on, among `nodeIds`. */
export async function waitSettled(
  endpoints: readonly string[],
  prefix: string,
  nodeIds: readonly string[],
  timeoutMs = 20_000,
): Promise<ClusterStatus> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const s = await status(endpoints, prefix);
      const live = s.nodes.map((n) => n.nodeId).sort();
      if (
        live.join() === [...nodeIds].sort().join() &&
        s.buckets.length === BUCKET_COUNT &&
        s.buckets.every((b) => b.owner?.nodeId === b.assignedTo)
      )
        return s;
    } catch {
      // etcd busy or failing over: ask again
    }
    if (Date.now() > deadline)
      throw new Error(`cluster not settled on ${nodeIds.join(',')} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Every batch of a bucket's log in etcd, with the coordinator epoch stamped in it, in log order
 * (the part still in etcd: at or above the checkpoint).
 */
export async function logEpochs(
  endpoints: readonly string[],
  prefix: string,
  bucket: number,
): Promise<{ logOffset: number; epoch: number }[]> {
  const connection = new EtcdConnection({ endpoints });
  try {
    const keys = new ClusterKeys(prefix).bucket(bucket);
    const end = Buffer.from(keys.log);
    end[end.length - 1]!++;
    const res = await connection.range({ key: Buffer.from(keys.log), range_end: end }, 'test');
    return res.kvs.map((kv) => ({
      logOffset: keys.logOffsetOf(kv.key),
      epoch: readBatchHeader(kv.value).coordinatorEpoch,
    }));
  } finally {
    connection.close();
  }
}

const RETRIABLE = new Set<number>([
  KAFKA_ERROR.NOT_COORDINATOR,
  KAFKA_ERROR.COORDINATOR_NOT_AVAILABLE,
  KAFKA_ERROR.COORDINATOR_LOAD_IN_PROGRESS,
  7 /* REQUEST_TIMED_OUT */,
]);

/** What the committers saw. */
export interface CommitHistory {
  /** Last acknowledged offset per group. */
  acknowledged: Map<string, bigint>;
  /** Highest offset sent per group (acknowledged or not: an unanswered commit may have landed). */
  attempted: Map<string, bigint>;
  /**
   * Acknowledged commits (performance.now() times): when the commit began (its first attempt), when
   * the attempt that was acknowledged was sent, and when the acknowledgement arrived.
   */
  acks: { groupId: string; offset: bigint; startedAtMs: number; sentAtMs: number; atMs: number }[];
  /** A fetch right after an acknowledged commit that saw less. */
  staleReads: string[];
  /** Errors that were not retriable. */
  fatal: string[];
  /** Retriable errors seen, by code. */
  retried: Map<number, number>;
}

/** Committers over a set of groups, each group committed by one loop, in order. */
export class Committers {
  readonly history: CommitHistory = {
    acknowledged: new Map(),
    attempted: new Map(),
    acks: [],
    staleReads: [],
    fatal: [],
    retried: new Map(),
  };
  readonly #clients = new Map<number, Promise<RawKafkaClient>>();
  #ports: () => number[];
  #stopped = false;
  #loops: Promise<void>[] = [];

  constructor(ports: () => number[]) {
    this.#ports = ports;
  }

  /** Starts one loop per group. */
  start(groupIds: readonly string[]): void {
    this.#loops = groupIds.map((groupId) => this.#loop(groupId));
  }

  /** Stops the loops (each finishes its commit in flight). */
  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.all(this.#loops);
  }

  /** Closes every connection. */
  async close(): Promise<void> {
    for (const client of this.#clients.values())
      await client.then(
        (c) => c.close(),
        () => {},
      );
    this.#clients.clear();
  }

  #client(port: number): Promise<RawKafkaClient> {
    let client = this.#clients.get(port);
    if (client === undefined) {
      client = RawKafkaClient.connect(port);
      this.#clients.set(port, client);
      client.then(
        (c) => c.closed.then(() => this.#clients.delete(port)),
        () => this.#clients.delete(port),
      );
    }
    return client;
  }

  /** The coordinator's port for `groupId`, asking any live node. */
  async coordinator(groupId: string): Promise<number | undefined> {
    for (const port of this.#ports()) {
      try {
        const client = await withTimeout(this.#client(port), 1000);
        const res = await answer(
          client,
          client.send(API_KEYS.FindCoordinator, 3, { key: groupId, keyType: 0 }),
          2000,
        );
        if (res.errorCode === 0) return res.port;
      } catch {
        this.#clients.delete(port);
      }
    }
    return undefined;
  }

  /** Commits `offset` for `groupId` until acknowledged (or stopped); returns whether it was. */
  async commit(groupId: string, offset: bigint): Promise<boolean> {
    const startedAtMs = performance.now();
    this.history.attempted.set(groupId, offset);
    while (!this.#stopped) {
      const port = await this.coordinator(groupId);
      if (port !== undefined) {
        try {
          const client = await withTimeout(this.#client(port), 1000);
          const sentAtMs = performance.now();
          const res = await answer(
            client,
            client.send(API_KEYS.OffsetCommit, 8, {
              groupId,
              generationIdOrMemberEpoch: -1,
              memberId: '',
              topics: [
                {
                  name: TOPIC,
                  partitions: [
                    { partitionIndex: 0, committedOffset: offset, committedMetadata: null },
                  ],
                },
              ],
            }),
            3000,
          );
          const code = res.topics[0]!.partitions[0]!.errorCode;
          if (code === 0) {
            this.history.acknowledged.set(groupId, offset);
            this.history.acks.push({
              groupId,
              offset,
              startedAtMs,
              sentAtMs,
              atMs: performance.now(),
            });
            await this.#checkFetch(client, groupId, offset);
            return true;
          }
          if (!RETRIABLE.has(code)) {
            this.history.fatal.push(`${groupId}@${offset}: error ${code}`);
            return false;
          }
          this.history.retried.set(code, (this.history.retried.get(code) ?? 0) + 1);
        } catch {
          this.#clients.delete(port); // connection lost or no answer: the outcome is unknown; commit again
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return false;
  }

  async #checkFetch(client: RawKafkaClient, groupId: string, offset: bigint): Promise<void> {
    try {
      const res = await answer(client, fetchOffset(client, groupId), 5000);
      const group = res.groups[0]!;
      if (group.errorCode !== 0) return; // moved away meanwhile: nothing was served
      const partition = group.topics[0]!.partitions[0]!;
      if (partition.errorCode === 0 && partition.committedOffset < offset)
        this.history.staleReads.push(
          `${groupId}: fetched ${partition.committedOffset} after ${offset} was acknowledged`,
        );
    } catch {
      // no answer: nothing was served
    }
  }

  async #loop(groupId: string): Promise<void> {
    let offset = BigInt(this.history.acknowledged.get(groupId) ?? 0n);
    while (!this.#stopped) {
      offset += 1n;
      await this.commit(groupId, offset);
    }
  }
}

/** OffsetFetch v8 of the topic's partition 0 for `groupId`. */
function fetchOffset(client: RawKafkaClient, groupId: string) {
  return client.send(API_KEYS.OffsetFetch, 8, {
    groups: [{ groupId, topics: [{ name: TOPIC, partitionIndexes: [0] }] }],
  });
}

/**
 * A request's answer, or an error once the connection closes (a killed server's socket closes at
 * once, and a real client notices; RawKafkaClient leaves the request pending) or `timeoutMs` passes.
 */
function answer<T>(client: RawKafkaClient, request: Promise<T>, timeoutMs: number): Promise<T> {
  const closed = client.closed.then(() => {
    throw new Error('connection closed before the answer');
  });
  closed.catch(() => {});
  return withTimeout(Promise.race([request, closed]), timeoutMs);
}

async function withTimeout<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer in ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Fetches every group's committed offset from its coordinator (retrying until one answers). */
export async function fetchAll(
  committers: Committers,
  ports: () => number[],
  groupIds: readonly string[],
): Promise<Map<string, bigint>> {
  const found = new Map<string, bigint>();
  for (const groupId of groupIds) {
    let last = 'no node named a coordinator';
    const deadline = performance.now() + 30_000;
    while (!found.has(groupId)) {
      if (performance.now() > deadline)
        throw new Error(`${groupId}: no committed offset fetched in 30 s; last: ${last}`);
      const port = await committers.coordinator(groupId);
      if (port !== undefined) {
        try {
          const client = await RawKafkaClient.connect(port);
          try {
            const res = await answer(client, fetchOffset(client, groupId), 5000);
            const code = res.groups[0]!.errorCode;
            if (code === 0)
              found.set(groupId, res.groups[0]!.topics[0]!.partitions[0]!.committedOffset);
            else last = `error ${code} from port ${port}`;
          } finally {
            await client.close();
          }
        } catch (error) {
          last = `port ${port}: ${(error as Error).message}`;
        }
      }
      if (!found.has(groupId)) await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  void ports;
  return found;
}
