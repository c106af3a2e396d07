/**
 * The wire's floor for the Kafka bench: a TCP server that answers every complete request frame at
 * once with a response of the real size, without decoding it, without a store and without a disk.
 * Driven by the same load process and frames as the real server, it measures what the network and
 * the client cost a request by themselves (the client's turnaround, the loopback hops, the wake-ups
 * of both processes), in the same run.
 *
 * With W requests kept in flight, throughput is W / latency (Little's law). A server that added no
 * work of its own to the store's would answer each request one echo round trip later than the
 * in-process API completes it, so its ratio to in-process would be at most
 * R_echo / (R_echo + R_in-process), requests per second each: the ceiling the bench prints beside
 * the wire's ratio. Where the load is CPU-bound rather than latency-bound (many connections on two
 * cores) the latencies overlap and the estimate is looser.
 */
import * as net from 'node:net';

/** A running echo floor server on 127.0.0.1. */
export interface EchoServer {
  readonly port: number;
  close(): Promise<void>;
}

/** Starts a server that answers each request frame with `response` (a whole frame, size included). */
export async function startEchoServer(response: Buffer): Promise<EchoServer> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.setNoDelay(true);
    socket.on('error', () => {});
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      const data = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      let position = 0;
      let frames = 0;
      while (data.length - position >= 4) {
        const size = data.readInt32BE(position);
        if (data.length - position < 4 + size) break;
        position += 4 + size;
        frames++;
      }
      buffered = position === data.length ? Buffer.alloc(0) : Buffer.from(data.subarray(position));
      if (frames === 0) return;
      // Answered in one write per read, as the real server writes the answers of one round.
      socket.cork();
      for (let f = 0; f < frames; f++) socket.write(response);
      socket.uncork();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
