/**
 * What TLS and SASL cost batched OffsetCommits over the Kafka server: one connection, pipelined
 * OffsetCommits (each of 100 partitions, 32 in flight per call), on a PLAINTEXT listener and on a
 * SASL_SSL listener (TLS 1.3, logged in once with SCRAM-SHA-256) of the same server over the same
 * store (durability 'fsync': the 32 commits of a call share fdatasyncs through group commit), side
 * by side in the same run, in interleaved rounds. Prints each subject's median offsets/s and range
 * over the rounds and the TLS cost as a fraction of plaintext throughput.
 *
 * Certificates are made with the `openssl` command at start (EC P-256), as the tests do.
 *
 * Expected order of magnitude: 50k-500k offsets/s plaintext on a laptop-class disk (bound by
 * fdatasync and by encoding 3,200 partitions per call); TLS adds AES-GCM over ~100 KB per call in
 * and ~40 KB out, well under a millisecond, so its cost should be a few percent to ~20%.
 * Target: TLS+SCRAM costs under 30% of plaintext batched-commit throughput.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import * as tls from 'node:tls';
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { OffsetStore, startKafkaServer } from '../src/index.js';
import { NodeFileSystem } from '../src/io/index.js';
import { UserCredentials } from '../src/kafka/index.js';
import {
  API_KEYS,
  FRAME_SIZE_BYTES,
  decodeResponse,
  encodeRequest,
  type ApiKey,
  type RequestInputOf,
  type ResponseOf,
} from '../src/kafka/protocol/index.js';
import { measureInterleaved, type MeasureOptions, type TaskResult } from './support/measure.js';
import { formatCount, printBanner, printTable, verdict, type Column } from './support/report.js';
import { atScale } from './support/scale.js';
import { createTempDir, removeTempDir } from './support/temp-dir.js';

const PARTITIONS = 100;
const COMMITS_PER_CALL = 32;
const RUNS = atScale({ quick: 2, default: 5, full: 9 });
const TIMING: MeasureOptions = atScale({
  quick: { timeMs: 400, warmupMs: 100, rounds: 1 },
  default: { timeMs: 1500, warmupMs: 300, rounds: 1 },
  full: { timeMs: 5000, warmupMs: 500, rounds: 1 },
});

/** A pipelining client over one socket: requests go out at once, responses are matched by correlation id. */
class PipelinedClient {
  readonly #socket: net.Socket;
  readonly #pending = new Map<
    number,
    { apiKey: ApiKey; version: number; resolve: (body: unknown) => void }
  >();
  #buffered: Buffer = Buffer.alloc(0);
  #next = 1;

  constructor(socket: net.Socket) {
    this.#socket = socket;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => {
      this.#buffered = this.#buffered.length === 0 ? chunk : Buffer.concat([this.#buffered, chunk]);
      while (this.#buffered.length >= FRAME_SIZE_BYTES) {
        const size = this.#buffered.readInt32BE(0);
        if (this.#buffered.length < FRAME_SIZE_BYTES + size) break;
        const payload = this.#buffered.subarray(FRAME_SIZE_BYTES, FRAME_SIZE_BYTES + size);
        this.#buffered = this.#buffered.subarray(FRAME_SIZE_BYTES + size);
        const pending = this.#pending.get(payload.readInt32BE(0))!;
        this.#pending.delete(payload.readInt32BE(0));
        pending.resolve(decodeResponse(pending.apiKey, pending.version, payload).body);
      }
    });
  }

  send<K extends ApiKey>(
    apiKey: K,
    version: number,
    body: RequestInputOf<K>,
  ): Promise<ResponseOf<K>> {
    const correlationId = this.#next++;
    return new Promise((resolve) => {
      this.#pending.set(correlationId, {
        apiKey,
        version,
        resolve: resolve as (body: unknown) => void,
      });
      this.#socket.write(
        encodeRequest({ apiKey, apiVersion: version, correlationId, clientId: 'bench' }, body),
      );
    });
  }

  close(): void {
    this.#socket.destroy();
  }
}

async function scramLogin(client: PipelinedClient, user: string, password: string): Promise<void> {
  await client.send(API_KEYS.SaslHandshake, 1, { mechanism: 'SCRAM-SHA-256' });
  const bare = `n=${user},r=${randomBytes(12).toString('base64')}`;
  const first = (
    await client.send(API_KEYS.SaslAuthenticate, 2, { authBytes: Buffer.from(`n,,${bare}`) })
  ).authBytes.toString();
  const attrs = Object.fromEntries(first.split(',').map((p) => [p[0], p.slice(2)]));
  const salted = pbkdf2Sync(
    password,
    Buffer.from(attrs.s!, 'base64'),
    Number(attrs.i),
    32,
    'sha256',
  );
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const withoutProof = `c=biws,r=${attrs.r}`;
  const signature = createHmac('sha256', createHash('sha256').update(clientKey).digest())
    .update(`${bare},${first},${withoutProof}`)
    .digest();
  const proof = Buffer.from(clientKey.map((b, i) => b ^ signature[i]!)).toString('base64');
  const final = await client.send(API_KEYS.SaslAuthenticate, 2, {
    authBytes: Buffer.from(`${withoutProof},p=${proof}`),
  });
  if (final.errorCode !== 0) throw new TypeError(`bench login failed: ${final.errorCode}`);
}

function certificates(dir: string): { cert: string; key: string } {
  const run = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  run(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'server.key']);
  run([
    'req',
    '-x509',
    '-new',
    '-key',
    'server.key',
    '-subj',
    '/CN=localhost',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
    '-days',
    '2',
    '-out',
    'server.crt',
  ]);
  return {
    cert: readFileSync(path.join(dir, 'server.crt'), 'utf8'),
    key: readFileSync(path.join(dir, 'server.key'), 'utf8'),
  };
}

/** One call: COMMITS_PER_CALL OffsetCommits of PARTITIONS partitions each, pipelined, all awaited. */
function committer(client: PipelinedClient, groupId: string): () => Promise<void> {
  let offset = 0n;
  return async () => {
    const commits = [];
    for (let c = 0; c < COMMITS_PER_CALL; c++) {
      offset++;
      commits.push(
        client.send(API_KEYS.OffsetCommit, 8, {
          groupId,
          generationIdOrMemberEpoch: -1,
          memberId: '',
          topics: [
            {
              name: 'orders',
              partitions: Array.from({ length: PARTITIONS }, (_, p) => ({
                partitionIndex: p,
                committedOffset: offset,
                committedLeaderEpoch: -1,
                committedMetadata: '',
              })),
            },
          ],
        }),
      );
    }
    for (const response of await Promise.all(commits)) {
      if (response.topics[0]!.partitions[0]!.errorCode !== 0) throw new TypeError('commit failed');
    }
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function main(): Promise<void> {
  printBanner('Kafka server: batched OffsetCommits, PLAINTEXT vs SASL_SSL (TLS + SCRAM-SHA-256)', [
    `${COMMITS_PER_CALL} pipelined OffsetCommits of ${PARTITIONS} partitions per call, one connection per subject, durability fsync; ${RUNS} runs, median and range`,
  ]);
  const dir = createTempDir('kafka-security');
  try {
    const { cert, key } = certificates(dir);
    const storeDir = path.join(dir, 'store');
    const store = await OffsetStore.open({ dir: storeDir, compaction: { strategy: 'none' } });
    await UserCredentials.addUser(new NodeFileSystem(), storeDir, 'bench', 'bench-password');
    const server = await startKafkaServer({
      store,
      topics: [{ name: 'orders', partitions: PARTITIONS }],
      listeners: [
        { securityProtocol: 'PLAINTEXT' },
        { securityProtocol: 'SASL_SSL', tls: { cert, key } },
      ],
    });
    const [plainPort, tlsPort] = server.listeners.map((l) => l.port) as [number, number];
    const plain = new PipelinedClient(
      await new Promise<net.Socket>((resolve) => {
        const s = net.connect({ host: '127.0.0.1', port: plainPort }, () => resolve(s));
      }),
    );
    const secure = new PipelinedClient(
      await new Promise<net.Socket>((resolve) => {
        const s = tls.connect(
          { host: '127.0.0.1', port: tlsPort, ca: cert, servername: 'localhost' },
          () => resolve(s),
        );
      }),
    );
    await scramLogin(secure, 'bench', 'bench-password');
    const specs = [
      {
        name: 'PLAINTEXT',
        fn: committer(plain, 'bench-plain'),
        async: true,
        unitsPerCall: COMMITS_PER_CALL * PARTITIONS,
      },
      {
        name: 'SASL_SSL (TLS + SCRAM)',
        fn: committer(secure, 'bench-tls'),
        async: true,
        unitsPerCall: COMMITS_PER_CALL * PARTITIONS,
      },
    ];
    const runs: TaskResult[][] = [];
    for (let r = 0; r < RUNS; r++)
      runs.push(await measureInterleaved(r % 2 === 0 ? specs : [...specs].reverse(), TIMING));
    const rows = specs.map((spec) => {
      const rates = runs.map((run) => run.find((t) => t.name === spec.name)!.unitsPerSec);
      return {
        name: spec.name,
        median: median(rates),
        min: Math.min(...rates),
        max: Math.max(...rates),
        p50Ms: median(runs.map((run) => run.find((t) => t.name === spec.name)!.p50Ms)),
      };
    });
    const columns: Column<(typeof rows)[number]>[] = [
      { header: 'listener', value: (r) => r.name, align: 'left' },
      { header: 'offsets/s (median)', value: (r) => formatCount(r.median) },
      { header: 'range', value: (r) => `${formatCount(r.min)} - ${formatCount(r.max)}` },
      { header: 'call p50 ms', value: (r) => r.p50Ms.toFixed(2) },
    ];
    printTable('Batched OffsetCommit throughput', columns, rows);
    const cost = 1 - rows[1]!.median / rows[0]!.median;
    const perRun = runs.map(
      (run) =>
        1 -
        run.find((t) => t.name === specs[1]!.name)!.unitsPerSec /
          run.find((t) => t.name === specs[0]!.name)!.unitsPerSec,
    );
    console.log(
      `- TLS + SCRAM cost: ${(cost * 100).toFixed(1)}% of plaintext throughput (per run: ${perRun.map((c) => `${(c * 100).toFixed(1)}%`).join(', ')}); target < 30%: ${verdict(cost < 0.3)}`,
    );
    plain.close();
    secure.close();
    await server.close({ closeStore: true });
  } finally {
    removeTempDir(dir);
  }
}

await main();
