import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  FRAME_SIZE_BYTES,
  KAFKA_APIS,
  decodeMessage,
  decodeRequest,
  decodeResponse,
  encodeMessage,
  encodeRequest,
  encodeResponse,
  versionsOf,
  type ApiKey,
} from '../../../src/kafka/protocol/index.js';
import { messageArb, propertyParameters } from './protocol-fixtures.js';

const APIS = Object.entries(KAFKA_APIS).map(([key, entry]) => ({
  apiKey: Number(key) as ApiKey,
  ...entry,
}));

describe('every message at every version it describes round-trips (random valid values -> encode -> decode -> equal)', () => {
  for (const api of APIS) {
    it(`${api.name} (key ${api.apiKey}) requests, versions ${api.request.versions}, as whole frames`, () => {
      for (const version of versionsOf(api.request.versions)) {
        fc.assert(
          fc.property(
            messageArb(api.request, version),
            fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
            fc.option(fc.string({ maxLength: 20 }), { nil: null }),
            (body, correlationId, clientId) => {
              const header = { apiKey: api.apiKey, apiVersion: version, correlationId, clientId };
              const frame = encodeRequest(header, body);
              expect(frame.readInt32BE(0)).toBe(frame.length - FRAME_SIZE_BYTES);
              const decoded = decodeRequest(frame.subarray(FRAME_SIZE_BYTES));
              expect(decoded.apiKey).toBe(api.apiKey);
              expect(decoded.header).toMatchObject(header);
              expect(decoded.body).toEqual(body);
            },
          ),
          propertyParameters(),
        );
      }
    });

    it(`${api.name} (key ${api.apiKey}) responses, versions ${api.response.versions}, as whole frames`, () => {
      for (const version of versionsOf(api.response.versions)) {
        fc.assert(
          fc.property(
            messageArb(api.response, version),
            fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
            (body, correlationId) => {
              const frame = encodeResponse(
                { apiKey: api.apiKey, apiVersion: version, correlationId },
                body,
              );
              expect(frame.readInt32BE(0)).toBe(frame.length - FRAME_SIZE_BYTES);
              const decoded = decodeResponse(api.apiKey, version, frame.subarray(FRAME_SIZE_BYTES));
              expect(decoded).toEqual({ correlationId, body });
            },
          ),
          propertyParameters(),
        );
      }
    });
  }

  it('a body decodes from the middle of a larger buffer, and re-encodes to the same bytes', () => {
    for (const api of APIS) {
      for (const version of versionsOf(api.request.versions)) {
        const [body] = fc.sample(messageArb(api.request, version), { numRuns: 1, seed: version });
        const bytes = encodeMessage(api.request, version, body!);
        const padded = Buffer.concat([Buffer.from([1, 2, 3]), bytes, Buffer.from([4, 5])]);
        const decoded = decodeMessage(api.request, version, padded, 3, 3 + bytes.length);
        expect(decoded).toEqual(body);
        expect(encodeMessage(api.request, version, decoded)).toEqual(bytes);
      }
    }
  });
});
