/**
 * The one error the Kafka protocol decoders raise for bytes they cannot accept: truncated input, a
 * length or count larger than the bytes present, null where the schema forbids it, an unknown API key
 * or a version no schema describes, bytes left over after a message. It is an OffsetStoreError with
 * code INVALID_REQUEST (Kafka's INVALID_REQUEST, 42, means the same: a request the broker could not
 * parse), so the server maps it like any other store error: it answers or closes the connection.
 * `position` is the byte (from the start of the decoded buffer) where decoding stopped.
 */
import { OffsetStoreError } from '../../errors/index.js';

/** Bytes that are not a valid Kafka message of the expected kind. Code INVALID_REQUEST. */
export class KafkaDecodeError extends OffsetStoreError {
  /** Byte position, from the start of the decoded buffer, where the problem was found. */
  readonly position: number;

  constructor(message: string, position: number) {
    super('INVALID_REQUEST', `${message} at byte ${position}`);
    this.name = 'KafkaDecodeError';
    this.position = position;
  }
}

/** True when `error` is a KafkaDecodeError. */
export function isKafkaDecodeError(error: unknown): error is KafkaDecodeError {
  return error instanceof KafkaDecodeError;
}
