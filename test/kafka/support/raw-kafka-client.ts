/**
 * A minimal Kafka client over one TCP connection, built on the codec, for tests that need exact
 * control: which API at which version, pipelining, raw bytes, a client that never reads. Responses
 * are matched to requests by correlation id and decoded at the request's version.
 */
import * as net from 'node:net';
import {
  FRAME_SIZE_BYTES,
  decodeResponse,
  encodeRequest,
  type ApiKey,
  type RequestInputOf,
  type ResponseOf,
} from '../../../src/kafka/protocol/index.js';

interface Pending {
  readonly apiKey: ApiKey;
  readonly apiVersion: number;
  readonly resolve: (payload: Buffer) => void;
}

/** One connection to a Kafka server. */
/** The client software ApiVersions v3 names (KIP-511: letters, digits, '.' and '-'). */
export const TEST_SOFTWARE = { clientSoftwareName: 'test', clientSoftwareVersion: '1' } as const;

export class RawKafkaClient {
  readonly socket: net.Socket;
  /** Correlation ids of responses, in the order they arrived. */
  readonly arrivals: number[] = [];
  readonly #pending = new Map<number, Pending>();
  #buffered: Buffer = Buffer.alloc(0);
  #nextCorrelationId = 1;
  /** Resolves when the server closes the connection (or it errs). */
  readonly closed: Promise<void>;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.on('error', () => {});
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
  }

  /** Connects to `port` on 127.0.0.1. */
  static connect(port: number, options: { read?: boolean } = {}): Promise<RawKafkaClient> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: '127.0.0.1', port }, () => {
        socket.off('error', reject);
        const client = new RawKafkaClient(socket);
        if (options.read === false) socket.pause();
        resolve(client);
      });
      socket.once('error', reject);
    });
  }

  /** Wraps a socket already connected (a TLS one, say). */
  static over(socket: net.Socket): RawKafkaClient {
    return new RawKafkaClient(socket);
  }

  /** Sends a request and resolves with its decoded response. */
  async send<K extends ApiKey>(
    apiKey: K,
    apiVersion: number,
    body: RequestInputOf<K>,
    clientId: string | null = 'raw-test',
  ): Promise<ResponseOf<K>> {
    return this.decode(apiKey, apiVersion, await this.sendRaw(apiKey, apiVersion, body, clientId));
  }

  /** Sends a request; resolves with the response payload (after the size field), undecoded. */
  sendRaw<K extends ApiKey>(
    apiKey: K,
    apiVersion: number,
    body: RequestInputOf<K>,
    clientId: string | null = 'raw-test',
    correlationId = this.#nextCorrelationId++,
  ): Promise<Buffer> {
    const frame = encodeRequest({ apiKey, apiVersion, correlationId, clientId }, body);
    return new Promise((resolve) => {
      this.#pending.set(correlationId, { apiKey, apiVersion, resolve });
      this.socket.write(frame);
    });
  }

  /** Decodes a response payload of `apiKey` at `apiVersion`. */
  decode<K extends ApiKey>(apiKey: K, apiVersion: number, payload: Buffer): ResponseOf<K> {
    return decodeResponse(apiKey, apiVersion, payload).body;
  }

  /** Resolves with the response to `correlationId`, for a request written as bytes (`write`). */
  responseTo(correlationId: number): Promise<Buffer> {
    return new Promise((resolve) => {
      this.#pending.set(correlationId, { apiKey: -1 as ApiKey, apiVersion: -1, resolve });
    });
  }

  /** Writes bytes as they are. */
  write(bytes: Buffer): void {
    this.socket.write(bytes);
  }

  /** Requests sent and not answered. */
  get pendingCount(): number {
    return this.#pending.size;
  }

  /** Closes the connection. */
  close(): Promise<void> {
    this.socket.destroy();
    return this.closed;
  }

  #onData(chunk: Buffer): void {
    this.#buffered = this.#buffered.length === 0 ? chunk : Buffer.concat([this.#buffered, chunk]);
    while (this.#buffered.length >= FRAME_SIZE_BYTES) {
      const size = this.#buffered.readInt32BE(0);
      if (this.#buffered.length < FRAME_SIZE_BYTES + size) break;
      const payload = this.#buffered.subarray(FRAME_SIZE_BYTES, FRAME_SIZE_BYTES + size);
      this.#buffered = this.#buffered.subarray(FRAME_SIZE_BYTES + size);
      const correlationId = payload.readInt32BE(0);
      this.arrivals.push(correlationId);
      const pending = this.#pending.get(correlationId);
      if (pending === undefined)
        throw new Error(`response with unknown correlation id ${correlationId}`);
      this.#pending.delete(correlationId);
      pending.resolve(payload);
    }
  }
}
