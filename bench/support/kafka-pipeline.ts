/**
 * A minimal pipelining Kafka client for the benches: requests are encoded once, before timing, and
 * sent as they are (a server answers in order per connection, so responses are matched by arrival
 * order and only their size field is read). What it costs per request is a socket write, a
 * resolver queued, and a frame boundary found: as little client work as a request can take, so the
 * figures are the server's and the store's.
 */
import * as net from 'node:net';

/** One connection that keeps many requests in flight. */
export class PipelinedConnection {
  readonly #socket: net.Socket;
  readonly #waiting: ((payload: Buffer) => void)[] = [];
  #head = 0;
  #buffered: Buffer = Buffer.alloc(0);

  private constructor(socket: net.Socket) {
    this.#socket = socket;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
  }

  /** Connects to 127.0.0.1:`port`. */
  static connect(port: number): Promise<PipelinedConnection> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: '127.0.0.1', port }, () =>
        resolve(new PipelinedConnection(socket)),
      );
      socket.once('error', reject);
    });
  }

  /** Sends an encoded request frame; resolves with its response payload. */
  request(frame: Buffer): Promise<Buffer> {
    return new Promise((resolve) => {
      this.#waiting.push(resolve);
      this.#socket.write(frame);
    });
  }

  /** Closes the connection. */
  close(): void {
    this.#socket.destroy();
  }

  #onData(chunk: Buffer): void {
    let data = this.#buffered.length === 0 ? chunk : Buffer.concat([this.#buffered, chunk]);
    let position = 0;
    while (data.length - position >= 4) {
      const size = data.readInt32BE(position);
      if (data.length - position < 4 + size) break;
      const payload = data.subarray(position + 4, position + 4 + size);
      position += 4 + size;
      this.#waiting[this.#head++]!(payload);
    }
    if (this.#head > 1024) {
      this.#waiting.splice(0, this.#head);
      this.#head = 0;
    }
    data = data.subarray(position);
    this.#buffered = data.length === 0 ? Buffer.alloc(0) : Buffer.from(data);
  }
}
