/**
 * A pipelining Kafka load driver in its own process, as a real client is: the bench's server process
 * then pays only for the server's side of each request (reading it off the socket, decoding,
 * handling, encoding and writing the response), not for the client's socket writes and reads too.
 *
 * The parent forks this module (`KafkaLoad.start`) and hands it the encoded request frames of each
 * connection over IPC. Each `round` keeps `pipelined` requests in flight on every connection for a
 * warm-up and then for the timed phase, and reports the calls completed in the timed phase, its wall
 * time and every call's latency, exactly what a measured round in bench/support/measure.ts reports.
 * Between rounds nothing is in flight.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { PipelinedConnection } from './kafka-pipeline.js';
import type { RoundResult } from './measure.js';

interface StartMessage {
  readonly kind: 'start';
  readonly port: number;
  readonly pipelined: number;
  /** Per connection, the frames it sends in turn. */
  readonly frames: readonly (readonly Buffer[])[];
}

interface RoundMessage {
  readonly kind: 'round';
  readonly timeMs: number;
  readonly warmupMs: number;
}

type ToChild = StartMessage | RoundMessage | { readonly kind: 'close' };
type FromChild =
  { kind: 'ready' } | { kind: 'round'; result: RoundResult } | { kind: 'error'; message: string };

/** The parent's handle on a load-driver process. */
export class KafkaLoad {
  readonly #child: ChildProcess;
  #pending: ((message: FromChild) => void) | undefined;

  private constructor(child: ChildProcess) {
    this.#child = child;
    child.on('message', (message: FromChild) => {
      const pending = this.#pending;
      this.#pending = undefined;
      pending?.(message);
    });
    child.on('exit', (code, signal) => {
      const pending = this.#pending;
      this.#pending = undefined;
      pending?.({ kind: 'error', message: `load driver exited with ${signal ?? code}` });
    });
  }

  /** Forks a driver connected to 127.0.0.1:`port`, one connection per entry of `frames`. */
  static async start(
    port: number,
    pipelined: number,
    frames: readonly (readonly Buffer[])[],
  ): Promise<KafkaLoad> {
    const child = fork(fileURLToPath(import.meta.url), [], {
      execArgv: ['--import', 'tsx'],
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const load = new KafkaLoad(child);
    await load.#ask({ kind: 'start', port, pipelined, frames });
    return load;
  }

  /** One measured round: warm-up, then `timeMs` counted. */
  async round(timeMs: number, warmupMs: number): Promise<RoundResult> {
    const reply = await this.#ask({ kind: 'round', timeMs, warmupMs });
    if (reply.kind !== 'round') throw new Error('load driver answered a round with no result');
    return reply.result;
  }

  /** Closes the connections and ends the process. */
  async close(): Promise<void> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.#child.once('exit', resolve));
    this.#child.send({ kind: 'close' } satisfies ToChild);
    await exited;
  }

  #ask(message: ToChild): Promise<FromChild> {
    return new Promise((resolve, reject) => {
      this.#pending = (reply) =>
        reply.kind === 'error' ? reject(new Error(reply.message)) : resolve(reply);
      this.#child.send(message);
    });
  }
}

// ---- the child ----------------------------------------------------------------------------------

async function drive(): Promise<void> {
  let connections: PipelinedConnection[] = [];
  let frames: readonly (readonly Buffer[])[] = [];
  let pipelined = 1;
  const send = (message: FromChild) => process.send!(message);

  async function round(timeMs: number, warmupMs: number): Promise<RoundResult> {
    let stop = false;
    let counting = false;
    let calls = 0;
    const samplesMs: number[] = [];
    const loop = async (c: number, lane: number) => {
      const mine = frames[c]!;
      for (let n = lane; !stop; n += pipelined) {
        const started = performance.now();
        await connections[c]!.request(mine[n % mine.length]!);
        if (counting) {
          calls++;
          samplesMs.push(performance.now() - started);
        }
      }
    };
    const loops: Promise<void>[] = [];
    for (let c = 0; c < connections.length; c++)
      for (let lane = 0; lane < pipelined; lane++) loops.push(loop(c, lane));
    await new Promise((resolve) => setTimeout(resolve, warmupMs));
    counting = true;
    const startedMs = performance.now();
    await new Promise((resolve) => setTimeout(resolve, timeMs));
    counting = false;
    const wallMs = performance.now() - startedMs;
    stop = true;
    await Promise.all(loops);
    return { calls, wallMs, samplesMs };
  }

  process.on('message', (message: ToChild) => {
    void (async () => {
      try {
        if (message.kind === 'start') {
          frames = message.frames.map((list) => list.map((f) => Buffer.from(f)));
          pipelined = message.pipelined;
          connections = await Promise.all(
            frames.map(() => PipelinedConnection.connect(message.port)),
          );
          send({ kind: 'ready' });
        } else if (message.kind === 'round') {
          send({ kind: 'round', result: await round(message.timeMs, message.warmupMs) });
        } else {
          for (const c of connections) c.close();
          process.disconnect();
        }
      } catch (error) {
        send({ kind: 'error', message: (error as Error).message });
      }
    })();
  });
}

if (process.send !== undefined && process.argv[1] === fileURLToPath(import.meta.url)) await drive();
