/**
 * SaslAuthenticate (key 36), versions 0-2, flexible from 2. Describes Apache Kafka's protocol (the
 * message schemas of Kafka trunk, October 2024: the 4.0 line), in this project's table form
 * (schema.ts).
 *
 * Carries one SASL token each way (KIP-152). v1 (KIP-368) adds the session lifetime the broker
 * grants (0: no limit).
 */
import { message, type MessageInput, type MessageValue } from '../schema.js';

/** SaslAuthenticate request table. */
export const SASL_AUTHENTICATE_REQUEST = message({
  name: 'SaslAuthenticateRequest',
  apiKey: 36,
  kind: 'request',
  versions: '0-2',
  flexible: '2+',
  fields: [{ name: 'authBytes', type: 'bytes', versions: '0+' }],
});

/** SaslAuthenticate response table. */
export const SASL_AUTHENTICATE_RESPONSE = message({
  name: 'SaslAuthenticateResponse',
  apiKey: 36,
  kind: 'response',
  versions: '0-2',
  flexible: '2+',
  fields: [
    { name: 'errorCode', type: 'int16', versions: '0+' },
    { name: 'errorMessage', type: 'string', versions: '0+', nullable: '0+', default: null },
    { name: 'authBytes', type: 'bytes', versions: '0+' },
    { name: 'sessionLifetimeMs', type: 'int64', versions: '1+' },
  ],
});

/** A decoded SaslAuthenticate request. */
export type SaslAuthenticateRequest = MessageValue<typeof SASL_AUTHENTICATE_REQUEST>;
/** A SaslAuthenticate response to encode. */
export type SaslAuthenticateResponseInput = MessageInput<typeof SASL_AUTHENTICATE_RESPONSE>;
