/**
 * SASL logins over a RawKafkaClient, for tests that need exact control of the exchange: PLAIN in
 * one SaslAuthenticate, and the client side of SCRAM (RFC 5802) in two.
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { API_KEYS } from '../../../src/kafka/protocol/index.js';
import type { RawKafkaClient } from './raw-kafka-client.js';

/**
 * SaslHandshake v1 then one PLAIN SaslAuthenticate (with `authzid` as the token's authorization id,
 * empty by default); resolves with the authenticate error code.
 */
export async function loginPlain(
  client: RawKafkaClient,
  user: string,
  password: string,
  authzid = '',
): Promise<number> {
  const handshake = await client.send(API_KEYS.SaslHandshake, 1, { mechanism: 'PLAIN' });
  if (handshake.errorCode !== 0) return handshake.errorCode;
  const answer = await client.send(API_KEYS.SaslAuthenticate, 2, {
    authBytes: Buffer.from(`${authzid}\0${user}\0${password}`),
  });
  return answer.errorCode;
}

/** A full SCRAM exchange; resolves with the error code of the step that failed, or 0. */
export async function loginScram(
  client: RawKafkaClient,
  mechanism: 'SCRAM-SHA-256' | 'SCRAM-SHA-512',
  user: string,
  password: string,
): Promise<number> {
  const h = mechanism === 'SCRAM-SHA-256' ? 'sha256' : 'sha512';
  const handshake = await client.send(API_KEYS.SaslHandshake, 1, { mechanism });
  if (handshake.errorCode !== 0) return handshake.errorCode;
  const bare = `n=${user},r=${randomBytes(12).toString('base64')}`;
  const first = await client.send(API_KEYS.SaslAuthenticate, 2, {
    authBytes: Buffer.from(`n,,${bare}`),
  });
  if (first.errorCode !== 0) return first.errorCode;
  const serverFirst = first.authBytes.toString();
  const attrs = Object.fromEntries(serverFirst.split(',').map((p) => [p[0], p.slice(2)]));
  const salted = pbkdf2Sync(
    password,
    Buffer.from(attrs.s!, 'base64'),
    Number(attrs.i),
    h === 'sha256' ? 32 : 64,
    h,
  );
  const clientKey = createHmac(h, salted).update('Client Key').digest();
  const withoutProof = `c=biws,r=${attrs.r}`;
  const signature = createHmac(h, createHash(h).update(clientKey).digest())
    .update(`${bare},${serverFirst},${withoutProof}`)
    .digest();
  const proof = Buffer.from(clientKey.map((b, i) => b ^ signature[i]!));
  const final = await client.send(API_KEYS.SaslAuthenticate, 2, {
    authBytes: Buffer.from(`${withoutProof},p=${proof.toString('base64')}`),
  });
  return final.errorCode;
}
