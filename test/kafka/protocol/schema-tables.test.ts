import { describe, expect, it } from 'vitest';
import {
  API_KEYS,
  KAFKA_APIS,
  advertisedApis,
  inVersions,
  isAdvertised,
  versionBounds,
  type FieldSpec,
  type MessageSpec,
  type VersionRange,
} from '../../../src/kafka/protocol/index.js';

const APIS = Object.entries(KAFKA_APIS).map(([key, entry]) => ({ apiKey: Number(key), ...entry }));

/** Where flexible versions start, per API (Kafka's schemas; also the research note's version matrix). */
const FLEXIBLE_FROM: Record<number, number | 'none'> = {
  0: 9,
  1: 12,
  2: 6,
  3: 9,
  8: 8,
  9: 6,
  10: 3,
  11: 6,
  12: 4,
  13: 4,
  14: 4,
  15: 5,
  16: 3,
  17: 'none',
  18: 3,
  36: 2,
  42: 2,
  47: 'none',
  68: 0,
  69: 0,
};

/** The advertised ranges the server needs (kafkajs 2.2.4, librdkafka 2.15, @platformatic/kafka 1.35), the describe of KIP-848 groups, ListGroups v5 (Kafka 4's admin tools filter groups by type), and SASL (handshake v1 only: v0 sends bare tokens). */
const ADVERTISED: Record<number, [number, number]> = {
  18: [0, 3],
  3: [0, 12],
  10: [0, 4],
  11: [0, 6],
  14: [0, 4],
  12: [0, 4],
  13: [0, 4],
  8: [2, 9],
  9: [1, 9],
  2: [1, 6],
  1: [4, 12],
  15: [0, 5],
  16: [0, 5],
  42: [0, 2],
  47: [0, 0],
  68: [0, 1],
  69: [0, 0],
  0: [3, 9],
  17: [1, 1],
  36: [0, 2],
};

/** True when `inner` lies in `outer` once both are clipped to the versions the message describes. */
function within(inner: VersionRange, outer: VersionRange, spec: MessageSpec): boolean {
  const described = versionBounds(spec.versions);
  const a = versionBounds(inner);
  const b = versionBounds(outer);
  return (
    a.max < a.min ||
    (a.min >= b.min && Math.min(a.max, described.max) <= Math.min(b.max, described.max))
  );
}

/** Every rule schema.ts states for the fields of one struct, recursively; returns the violations. */
function fieldViolations(
  spec: MessageSpec,
  fields: readonly FieldSpec[],
  parent: VersionRange,
  path: string,
): string[] {
  const found: string[] = [];
  const names = new Set<string>();
  const tags = new Set<number>();
  const flexible = versionBounds(spec.flexible);
  for (const f of fields) {
    const where = `${spec.name} ${path}${f.name}`;
    if (!/^[a-z][A-Za-z0-9]*$/.test(f.name)) found.push(`${where}: not camelCase`);
    if (names.has(f.name)) found.push(`${where}: duplicate name`);
    names.add(f.name);
    if (!within(f.versions, parent, spec))
      found.push(`${where}: versions ${f.versions} outside its parent's ${parent}`);
    if (f.nullable !== undefined && !within(f.nullable, f.versions, spec))
      found.push(`${where}: nullable ${f.nullable} outside versions ${f.versions}`);
    if (f.tag !== undefined) {
      if (versionBounds(f.versions).min < flexible.min || flexible.max !== Infinity)
        found.push(`${where}: tagged outside flexible versions`);
      if (tags.has(f.tag)) found.push(`${where}: duplicate tag ${f.tag}`);
      tags.add(f.tag);
    }
    const hasFields = f.type === 'struct' || f.type === '[]struct';
    if (hasFields !== (f.fields !== undefined && f.fields.length > 0))
      found.push(`${where}: fields given for ${f.type}`);
    if (f.type === 'records' && f.nullable !== f.versions)
      found.push(`${where}: records are nullable in all their versions`);
    if (f.default === null && f.nullable === undefined)
      found.push(`${where}: default null but never nullable`);
    if (f.default !== undefined && f.default !== null) {
      const ok =
        f.type === 'bool'
          ? typeof f.default === 'boolean'
          : f.type === 'string'
            ? typeof f.default === 'string'
            : ['int8', 'int16', 'int32', 'int64'].includes(f.type)
              ? Number.isInteger(f.default)
              : false;
      if (!ok) found.push(`${where}: default ${String(f.default)} does not fit ${f.type}`);
    }
    if (hasFields)
      found.push(
        ...fieldViolations(
          spec,
          f.fields ?? [],
          f.versions,
          `${path}${f.name}${f.type === '[]struct' ? '[]' : ''}.`,
        ),
      );
  }
  return found;
}

describe('schema tables', () => {
  it('pair a request and a response per API key, over the same versions and flexible versions', () => {
    for (const api of APIS) {
      expect([api.request.apiKey, api.request.kind, api.request.name]).toEqual([
        api.apiKey,
        'request',
        `${api.name}Request`,
      ]);
      expect([api.response.apiKey, api.response.kind, api.response.name]).toEqual([
        api.apiKey,
        'response',
        `${api.name}Response`,
      ]);
      expect(api.response.versions).toBe(api.request.versions);
      expect(api.response.flexible).toBe(api.request.flexible);
      expect(API_KEYS[api.name as keyof typeof API_KEYS]).toBe(api.apiKey);
    }
    expect(Object.keys(API_KEYS)).toHaveLength(APIS.length);
  });

  it('make versions flexible where Kafka does', () => {
    for (const api of APIS) {
      const from = FLEXIBLE_FROM[api.apiKey];
      expect(api.request.flexible, api.name).toBe(from === 'none' ? 'none' : `${from}+`);
    }
  });

  it('follow the table rules: nesting, nullable and tagged versions, unique names and tags, typed defaults', () => {
    const violations = APIS.flatMap((api) => [api.request, api.response]).flatMap((spec) =>
      fieldViolations(spec, spec.fields, spec.versions, ''),
    );
    expect(violations).toEqual([]);
  });

  it('cover at least the versions the server advertises, for requests and responses', () => {
    for (const api of APIS) {
      if (api.advertised === null) continue;
      for (let version = api.advertised.min; version <= api.advertised.max; version++) {
        expect(inVersions(api.request.versions, version), `${api.name} v${version}`).toBe(true);
      }
    }
  });
});

describe('advertised API versions', () => {
  it('are exactly the ranges that satisfy kafkajs, librdkafka and @platformatic/kafka', () => {
    const rows = advertisedApis();
    expect(Object.fromEntries(rows.map((r) => [r.apiKey, [r.minVersion, r.maxVersion]]))).toEqual(
      ADVERTISED,
    );
    expect(rows.map((r) => r.apiKey)).toEqual([...rows.map((r) => r.apiKey)].sort((a, b) => a - b));
  });

  it('include ConsumerGroupDescribe v0 (the server answers it) and nothing outside the ranges', () => {
    expect(isAdvertised(API_KEYS.ConsumerGroupDescribe, 0)).toBe(true);
    expect(isAdvertised(API_KEYS.ConsumerGroupDescribe, 1)).toBe(false);
    expect(isAdvertised(API_KEYS.OffsetCommit, 1)).toBe(false);
    expect(isAdvertised(API_KEYS.OffsetCommit, 2)).toBe(true);
    expect(isAdvertised(API_KEYS.Fetch, 13)).toBe(false);
    expect(isAdvertised(99, 0)).toBe(false);
  });

  it("meet librdkafka's feature gates: Produce >= 3 with Fetch >= 4 (MSGVER2), and KIP-848 with OffsetCommit and OffsetFetch 9", () => {
    expect(isAdvertised(API_KEYS.Produce, 3) && isAdvertised(API_KEYS.Fetch, 4)).toBe(true);
    expect(
      isAdvertised(API_KEYS.ConsumerGroupHeartbeat, 1) &&
        isAdvertised(API_KEYS.OffsetCommit, 9) &&
        isAdvertised(API_KEYS.OffsetFetch, 9),
    ).toBe(true);
  });

  it('include a non-flexible version of every API kafkajs uses, and a flexible one of every flexible API @platformatic/kafka uses', () => {
    const {
      ApiVersions,
      Metadata,
      FindCoordinator,
      JoinGroup,
      SyncGroup,
      Heartbeat,
      LeaveGroup,
      OffsetCommit,
      OffsetFetch,
      ListOffsets,
      Fetch,
    } = API_KEYS;
    const common = [
      ApiVersions,
      Metadata,
      FindCoordinator,
      JoinGroup,
      SyncGroup,
      Heartbeat,
      LeaveGroup,
      OffsetCommit,
      OffsetFetch,
      ListOffsets,
      Fetch,
      API_KEYS.DescribeGroups,
      API_KEYS.ListGroups,
      API_KEYS.DeleteGroups,
    ];
    for (const apiKey of common) {
      const flexible = versionBounds(KAFKA_APIS[apiKey].request.flexible);
      expect(isAdvertised(apiKey, flexible.min - 1), `kafkajs: key ${apiKey}`).toBe(true);
    }
    for (const apiKey of [...common, API_KEYS.ConsumerGroupHeartbeat]) {
      const flexible = versionBounds(KAFKA_APIS[apiKey].request.flexible);
      expect(isAdvertised(apiKey, flexible.min), `@platformatic/kafka: key ${apiKey}`).toBe(true);
    }
  });
});
