/**
 * A TCP proxy between real Kafka clients and a test server, on 127.0.0.1 port 0, that reads the
 * requests going through it: the server advertises the proxy's port, so every connection of a
 * client (bootstrap, coordinator, fetch) passes here. Tests use it to
 * - see what a client asks for (the Fetch offsets a consumer resumes from), decoded by the codec;
 * - cut a client off as a killed process would be: every connection whose requests carry a cut
 *   client id is destroyed, and so is each new one at its first request, so no LeaveGroup (or
 *   anything else) of that client reaches the server;
 * - keep the clients' bootstrap address across a restart of the server (`target` moves).
 */
import * as net from 'node:net';
import {
  API_KEYS,
  decodeRequest,
  decodeRequestHeader,
  type RequestOf,
} from '../../../src/kafka/protocol/index.js';

/** A Fetch request seen going through, with the client id that sent it. */
export interface SeenFetch {
  readonly clientId: string | null;
  readonly request: RequestOf<typeof API_KEYS.Fetch>;
}

/** The proxy; see the module header. */
export class KafkaProxy {
  /** The port clients connect to (advertise it). */
  readonly port: number;
  /** The server's port requests go to; may change between connections (a restarted server). */
  target = 0;
  /** Fetch requests seen, in order. */
  readonly fetches: SeenFetch[] = [];
  readonly #server: net.Server;
  readonly #cut = new Set<string>();
  readonly #pairs = new Set<{ client: net.Socket; server: net.Socket; clientIds: Set<string> }>();

  private constructor(server: net.Server, port: number) {
    this.#server = server;
    this.port = port;
  }

  /** Starts a proxy on 127.0.0.1 port 0. */
  static async start(): Promise<KafkaProxy> {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
    const proxy = new KafkaProxy(server, (server.address() as net.AddressInfo).port);
    server.on('connection', (socket) => proxy.#accept(socket));
    return proxy;
  }

  /** Cuts off every connection of a client id, now and later. */
  cut(clientId: string): void {
    this.#cut.add(clientId);
    for (const pair of this.#pairs) if (pair.clientIds.has(clientId)) this.#drop(pair);
  }

  /** Destroys every connection (the clients reconnect through the proxy). */
  dropAll(): void {
    for (const pair of this.#pairs) this.#drop(pair);
  }

  /** Stops the proxy and destroys every connection. */
  async close(): Promise<void> {
    this.dropAll();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #drop(pair: { client: net.Socket; server: net.Socket }): void {
    pair.client.destroy();
    pair.server.destroy();
  }

  #accept(client: net.Socket): void {
    const server = net.connect({ host: '127.0.0.1', port: this.target });
    const pair = { client, server, clientIds: new Set<string>() };
    this.#pairs.add(pair);
    for (const socket of [client, server]) {
      socket.on('error', () => {});
      socket.on('close', () => {
        this.#drop(pair);
        this.#pairs.delete(pair);
      });
    }
    server.on('data', (chunk: Buffer) => client.write(chunk));
    let buffered = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 4 && buffered.length >= 4 + buffered.readInt32BE(0)) {
        const size = buffered.readInt32BE(0);
        const frame = buffered.subarray(0, 4 + size);
        buffered = buffered.subarray(4 + size);
        const header = decodeRequestHeader(frame.subarray(4));
        if (header.clientId !== null) pair.clientIds.add(header.clientId);
        if (header.clientId !== null && this.#cut.has(header.clientId)) {
          this.#drop(pair);
          return;
        }
        if (header.apiKey === API_KEYS.Fetch) {
          this.fetches.push({
            clientId: header.clientId,
            request: decodeRequest(frame.subarray(4), header).body as RequestOf<
              typeof API_KEYS.Fetch
            >,
          });
        }
        server.write(frame);
      }
    });
  }
}
