/**
 * Test support for the Kafka protocol codec: random valid values of any message table at any
 * version (fast-check arbitraries built from the table), the defaults a decoder must produce for
 * fields a version lacks (written here from the rules in schema.ts, independently of the codec),
 * annotated hex for golden bytes, and the property-run settings (KAFKA_PROPERTY_RUNS,
 * KAFKA_PROPERTY_SEED to replay a failure; fast-check prints the seed of a failing run).
 */
import fc from 'fast-check';
import {
  inVersions,
  type FieldSpec,
  type MessageSpec,
  type ScalarType,
} from '../../../src/kafka/protocol/index.js';

/** Runs per property (per message, version and kind). */
export const PROPERTY_RUNS = Number(process.env.KAFKA_PROPERTY_RUNS ?? 25);

/** fast-check parameters: the run count, and a fixed seed when KAFKA_PROPERTY_SEED is set. */
export function propertyParameters(numRuns = PROPERTY_RUNS): fc.Parameters<unknown> {
  const seed = process.env.KAFKA_PROPERTY_SEED;
  return seed === undefined ? { numRuns } : { numRuns, seed: Number(seed) };
}

/**
 * Bytes from annotated hex: whitespace is ignored and `#` starts a comment to the end of the line,
 * so a golden message reads as a byte table.
 */
export function hex(strings: TemplateStringsArray, ...values: unknown[]): Buffer {
  const text = strings.reduce(
    (all, part, i) => all + part + (i < values.length ? String(values[i]) : ''),
    '',
  );
  const digits = text.replace(/#[^\n]*/g, '').replace(/\s+/g, '');
  if (!/^([0-9a-f]{2})*$/i.test(digits)) throw new TypeError(`not hex: ${digits}`);
  return Buffer.from(digits, 'hex');
}

/** The UTF-8 bytes of `text` as hex, for writing strings into golden bytes. */
export function utf8Hex(text: string): string {
  return Buffer.from(text, 'utf8').toString('hex');
}

/** The default the decoder must give a field (schema.ts's rules, restated). */
export function expectedDefault(field: FieldSpec): unknown {
  if (field.default === null) return null;
  if (field.type.startsWith('[]')) return [];
  switch (field.type) {
    case 'struct':
      return Object.fromEntries((field.fields ?? []).map((f) => [f.name, expectedDefault(f)]));
    case 'bool':
      return field.default ?? false;
    case 'int64':
      return BigInt(field.default ?? 0);
    case 'uuid':
      return '00000000-0000-0000-0000-000000000000';
    case 'string':
      return field.default ?? '';
    case 'bytes':
      return Buffer.alloc(0);
    case 'records':
      return null;
    default:
      return field.default ?? 0;
  }
}

const uuidArb = fc.oneof(
  { weight: 1, arbitrary: fc.constant('00000000-0000-0000-0000-000000000000') },
  {
    weight: 5,
    arbitrary: fc.uint8Array({ minLength: 16, maxLength: 16 }).map((b) => {
      const h = Buffer.from(b).toString('hex');
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
    }),
  },
);

const stringArb = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: 'grapheme', maxLength: 10 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 120, maxLength: 300 }) },
);

const bytesArb = fc
  .oneof(
    { weight: 6, arbitrary: fc.uint8Array({ maxLength: 12 }) },
    { weight: 1, arbitrary: fc.uint8Array({ minLength: 120, maxLength: 300 }) },
  )
  .map((b) => Buffer.from(b));

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

function scalarArb(type: ScalarType): fc.Arbitrary<unknown> {
  switch (type) {
    case 'bool':
      return fc.boolean();
    case 'int8':
      return fc.integer({ min: -0x80, max: 0x7f });
    case 'int16':
      return fc.integer({ min: -0x8000, max: 0x7fff });
    case 'int32':
      return fc.integer({ min: -0x80000000, max: 0x7fffffff });
    case 'int64':
      return fc.oneof(
        fc.constantFrom(-1n, -2n, 0n, INT64_MIN, INT64_MAX),
        fc.bigInt({ min: INT64_MIN, max: INT64_MAX }),
      );
    case 'uuid':
      return uuidArb;
    case 'string':
      return stringArb;
    case 'bytes':
    case 'records':
      return bytesArb;
  }
}

function fieldArb(field: FieldSpec, version: number): fc.Arbitrary<unknown> {
  let arb: fc.Arbitrary<unknown>;
  if (field.type === 'struct') arb = structArb(field.fields ?? [], version);
  else if (field.type === '[]struct')
    arb = fc.array(structArb(field.fields ?? [], version), { maxLength: 3 });
  else if (field.type.startsWith('[]'))
    arb = fc.array(scalarArb(field.type.slice(2) as ScalarType), { maxLength: 4 });
  else arb = scalarArb(field.type as ScalarType);
  if (field.tag !== undefined) arb = fc.oneof(fc.constant(expectedDefault(field)), arb);
  return inVersions(field.nullable, version) ? fc.option(arb, { nil: null, freq: 4 }) : arb;
}

/** Random values of a struct at `version`: fields the version lacks are at their defaults. */
export function structArb(
  fields: readonly FieldSpec[],
  version: number,
): fc.Arbitrary<Record<string, unknown>> {
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const field of fields) {
    model[field.name] = inVersions(field.versions, version)
      ? fieldArb(field, version)
      : fc.constant(expectedDefault(field));
  }
  return fc.record(model);
}

/** Random valid values of a message at `version`. */
export function messageArb(
  spec: MessageSpec,
  version: number,
): fc.Arbitrary<Record<string, unknown>> {
  return structArb(spec.fields, version);
}
