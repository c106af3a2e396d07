import { describe, expect, it } from 'vitest';
import {
  API_KEYS,
  KAFKA_APIS,
  KafkaDecodeError,
  decodeRequest,
  decodeRequestHeader,
  encodeRequest,
  encodeResponse,
  inVersions,
  requestHeaderVersion,
  responseHeaderVersion,
  versionsOf,
} from '../../../src/kafka/protocol/index.js';
import { hex, utf8Hex } from './protocol-fixtures.js';

const APIS = Object.entries(KAFKA_APIS).map(([key, entry]) => ({ apiKey: Number(key), ...entry }));

describe('header versions', () => {
  it('are request v2 / response v1 for flexible API versions and v1 / v0 otherwise, for every described version', () => {
    for (const api of APIS) {
      for (const version of versionsOf(api.request.versions)) {
        const flexible = inVersions(api.request.flexible, version);
        expect(requestHeaderVersion(api.apiKey, version), `${api.name} v${version}`).toBe(
          flexible ? 2 : 1,
        );
        if (api.apiKey !== API_KEYS.ApiVersions)
          expect(responseHeaderVersion(api.apiKey, version), `${api.name} v${version}`).toBe(
            flexible ? 1 : 0,
          );
      }
    }
  });

  it('make every ApiVersions response header v0, flexible or not (KIP-511)', () => {
    for (const version of [0, 1, 2, 3, 4, 5, 9])
      expect(responseHeaderVersion(API_KEYS.ApiVersions, version)).toBe(0);
    const frame = encodeResponse(
      { apiKey: API_KEYS.ApiVersions, apiVersion: 3, correlationId: 1 },
      {},
    );
    expect(frame.subarray(4, 10)).toEqual(hex`00000001 0000`);
    const heartbeat = encodeResponse(
      { apiKey: API_KEYS.Heartbeat, apiVersion: 4, correlationId: 1 },
      {},
    );
    expect(heartbeat.subarray(4)).toEqual(hex`00000001 00   00000000 0000 00`);
  });

  it("follow the open flexible range past the described versions, as Kafka's broker does", () => {
    expect(requestHeaderVersion(API_KEYS.ApiVersions, 5)).toBe(2);
    expect(requestHeaderVersion(API_KEYS.Fetch, 18)).toBe(2);
    expect(requestHeaderVersion(API_KEYS.OffsetDelete, 1)).toBe(1);
    expect(requestHeaderVersion(99, 0)).toBe(1);
  });
});

describe('request headers', () => {
  it('keep client_id an int16-length string in header v2, followed by the tagged section', () => {
    const frame = encodeRequest(
      { apiKey: API_KEYS.Heartbeat, apiVersion: 4, correlationId: 9, clientId: 'ab' },
      { groupId: 'g', memberId: 'm' },
    );
    expect(frame).toEqual(hex`
      00000017                  # size: 23 bytes follow
      000c 0004 00000009        # Heartbeat v4, correlation id 9
      0002 ${utf8Hex('ab')}     # client id: int16 length, not compact
      00                        # header tagged section
      02 ${utf8Hex('g')} 00000000 02 ${utf8Hex('m')} 00 00   # body: group, generation 0, member, instance null, tags
    `);
    expect(decodeRequestHeader(frame.subarray(4))).toEqual({
      apiKey: 12,
      apiVersion: 4,
      correlationId: 9,
      clientId: 'ab',
      headerVersion: 2,
      headerBytes: 13,
    });
  });

  it('decode a null client id as null, and skip tagged fields in header v2', () => {
    const payload = hex`000c 0004 00000009 ffff  02 00 01 aa 05 00   02 67 00000000 02 6d 00 00`;
    const { header, body } = decodeRequest(payload);
    expect(header).toMatchObject({ clientId: null, headerVersion: 2, headerBytes: 16 });
    expect(body).toEqual({ groupId: 'g', generationId: 0, memberId: 'm', groupInstanceId: null });
  });

  it('let a server read the header of an API key or version it does not describe, while decodeRequest refuses the body', () => {
    const v5 = hex`0012 0005 0000002a 0003 ${utf8Hex('new')} 00 05 ${utf8Hex('next')} 02 ${utf8Hex('9')} 00`;
    expect(decodeRequestHeader(v5)).toMatchObject({
      apiKey: 18,
      apiVersion: 5,
      correlationId: 42,
      headerVersion: 2,
    });
    expect(() => decodeRequest(v5)).toThrow(KafkaDecodeError);
    expect(() => decodeRequest(v5)).toThrow(/ApiVersions has no version 5/);
    const unknown = hex`0063 0000 00000007 0000 ffffffff`;
    expect(decodeRequestHeader(unknown)).toMatchObject({
      apiKey: 99,
      correlationId: 7,
      headerVersion: 1,
    });
    expect(() => decodeRequest(unknown)).toThrow(/unknown API key 99/);
  });

  it('are validated before anything is written', () => {
    expect(() =>
      encodeRequest(
        { apiKey: API_KEYS.Heartbeat, apiVersion: 4, correlationId: 2 ** 31, clientId: null },
        {},
      ),
    ).toThrow(/correlationId must be an int32/);
    expect(() =>
      encodeRequest(
        {
          apiKey: API_KEYS.Heartbeat,
          apiVersion: 4,
          correlationId: 1,
          clientId: 'x'.repeat(40000),
        },
        {},
      ),
    ).toThrow(/clientId has 40000/);
    expect(() =>
      encodeResponse({ apiKey: API_KEYS.Heartbeat, apiVersion: 4, correlationId: 0.5 }, {}),
    ).toThrow(/correlationId must be an int32/);
  });
});
