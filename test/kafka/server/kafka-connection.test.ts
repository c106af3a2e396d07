/**
 * One connection on its own, over a real loopback socket, with routers standing in for the
 * server's: what it does when a request's answer never comes as a response.
 */
import * as net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SystemClock } from '../../../src/util/index.js';
import { API_KEYS, encodeRequest } from '../../../src/kafka/protocol/index.js';
import { KafkaConnection, type RequestRouter } from '../../../src/kafka/server/index.js';

const LIMITS = {
  requestBytesMax: 1024 * 1024,
  inFlightRequestsMax: 16,
  pendingResponseBytesMax: 1024 * 1024,
  closeGraceMs: 1000,
};

const cleanups: (() => void)[] = [];
afterEach(() => cleanups.splice(0).forEach((cleanup) => cleanup()));

/** A connection over a loopback socket whose requests `route` answers; returns the client's socket. */
async function connect(route: RequestRouter['route']): Promise<net.Socket> {
  const router = { route } as unknown as RequestRouter;
  const server = net.createServer((socket) => {
    new KafkaConnection(socket, router, LIMITS, new SystemClock());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  const client = net.connect(port, '127.0.0.1');
  client.on('error', () => {});
  cleanups.push(() => {
    client.destroy();
    server.close();
  });
  await new Promise<void>((resolve) => client.once('connect', resolve));
  return client;
}

function heartbeat(): Buffer {
  return encodeRequest(
    { apiKey: API_KEYS.Heartbeat, apiVersion: 4, correlationId: 1, clientId: 'test' },
    { groupId: 'g', generationId: 1, memberId: 'm', groupInstanceId: null },
  );
}

describe('a connection', () => {
  it('closes, rather than waiting forever, when the answer to a request rejects', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    cleanups.push(() => process.off('unhandledRejection', onUnhandled));
    const client = await connect(() => Promise.reject(new Error('a router that failed')));
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    client.write(heartbeat());
    await closed;
    await new Promise((resolve) => setImmediate(resolve));
    expect(unhandled).toEqual([]);
  });
});
