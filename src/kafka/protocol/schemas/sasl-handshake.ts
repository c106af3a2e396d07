/**
 * SaslHandshake (key 17), versions 0-1, never flexible. Describes Apache Kafka's protocol (the
 * message schemas of Kafka trunk, October 2024: the 4.0 line), in this project's table form
 * (schema.ts).
 *
 * A client names the SASL mechanism it wants; the broker answers with the mechanisms its listener
 * enables. v1 (KIP-152) means the tokens that follow travel in SaslAuthenticate requests; v0 means
 * they follow as bare size-prefixed frames (this server advertises v1 only).
 */
import { message, type MessageInput, type MessageValue } from '../schema.js';

/** SaslHandshake request table. */
export const SASL_HANDSHAKE_REQUEST = message({
  name: 'SaslHandshakeRequest',
  apiKey: 17,
  kind: 'request',
  versions: '0-1',
  flexible: 'none',
  fields: [{ name: 'mechanism', type: 'string', versions: '0+' }],
});

/** SaslHandshake response table. */
export const SASL_HANDSHAKE_RESPONSE = message({
  name: 'SaslHandshakeResponse',
  apiKey: 17,
  kind: 'response',
  versions: '0-1',
  flexible: 'none',
  fields: [
    { name: 'errorCode', type: 'int16', versions: '0+' },
    { name: 'mechanisms', type: '[]string', versions: '0+' },
  ],
});

/** A decoded SaslHandshake request. */
export type SaslHandshakeRequest = MessageValue<typeof SASL_HANDSHAKE_REQUEST>;
/** A SaslHandshake response to encode. */
export type SaslHandshakeResponseInput = MessageInput<typeof SASL_HANDSHAKE_RESPONSE>;
