/**
 * The form of this store's Kafka message schema tables (src/kafka/protocol/schemas/): what a field
 * is, in which versions it exists, is nullable or is tagged, and its default. The tables describe
 * Apache Kafka's protocol; the codec (message-encoder.ts, message-decoder.ts) interprets them, and
 * the TypeScript types of decoded and encodable values are derived from them here, so a table is
 * the one place a message is defined.
 *
 * Rules the tables follow (test/kafka/protocol/schema-tables.test.ts checks them):
 * - a field lists its versions; outside them it is not on the wire, decodes to its default and is
 *   not written when encoding;
 * - `nullable` names the versions in which null is allowed; a tagged field (`tag`) is tagged in all
 *   of its versions, which are flexible ones; tags are unique within a struct;
 * - nested fields exist only in versions where their parent does.
 *
 * Values: int8/int16/int32 are numbers, int64 is a bigint (offsets and timestamps round-trip exactly,
 * negative ones included: kafkajs commits -1 and -2 literally), uuid is a lowercase
 * `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` string, bytes and records are Buffers (records stay raw:
 * this codec never looks inside a record batch).
 *
 * Defaults, as in Kafka's generated classes: the `default` given, else 0, 0n, false, '' (also for a
 * nullable string), the zero uuid, an empty Buffer (bytes), null (records), an empty array, or a
 * struct of its fields' defaults; `default: null` makes a nullable field default to null.
 */
import type { VersionRange } from './version-range.js';

/** Kafka's limit on the UTF-8 bytes of a string, in both encodings, on both sides. */
export const STRING_BYTES_MAX = 0x7fff;

/**
 * Most array elements one message may hold, in all its arrays together (nested ones included). Not
 * Kafka's: its broker bounds a request by bytes alone. But an element can take as little as 1-3
 * bytes (an empty topic of a flexible OffsetCommit takes 3), so 100 MiB could hold 35 million of
 * them, and decoding those on the event loop held every other connection for seconds. A million is
 * far above what a client sends (a consumer commits one element per partition it owns).
 */
export const ARRAY_ELEMENTS_MAX = 1_000_000;

/** A type that is not a collection. */
export type ScalarType =
  'bool' | 'int8' | 'int16' | 'int32' | 'int64' | 'uuid' | 'string' | 'bytes' | 'records';

/** A field's type: a scalar, an array of scalars (`'[]int32'`), a struct, or an array of structs. */
export type FieldType = ScalarType | `[]${ScalarType}` | 'struct' | '[]struct';

/** A default value as a table writes it (int64 defaults are written as numbers). */
export type DefaultValue = number | boolean | string | null;

/** One field of a message or struct. */
export interface FieldSpec {
  /** The property name in decoded values (Kafka's field name in camelCase). */
  readonly name: string;
  readonly type: FieldType;
  /** Versions in which the field exists. */
  readonly versions: VersionRange;
  /** Versions in which the field may be null (absent: never). */
  readonly nullable?: VersionRange;
  /** The tag of a tagged field: written in the tagged-field section, and only when not its default. */
  readonly tag?: number;
  readonly default?: DefaultValue;
  /** Fields of a struct or of the elements of a struct array. */
  readonly fields?: readonly FieldSpec[];
}

/** A request or response message of one API, over the versions the table describes. */
export interface MessageSpec {
  /** Kafka's message name, e.g. `'OffsetCommitRequest'`. */
  readonly name: string;
  readonly apiKey: number;
  readonly kind: 'request' | 'response';
  /** The versions this table describes. */
  readonly versions: VersionRange;
  /** The versions using compact lengths and tagged-field sections (KIP-482). */
  readonly flexible: VersionRange;
  readonly fields: readonly FieldSpec[];
}

/** Declares a message table, keeping its literal types so values can be typed from it. */
export function message<const M extends MessageSpec>(spec: M): M {
  return spec;
}

type ScalarValue<T> = T extends 'bool'
  ? boolean
  : T extends 'int64'
    ? bigint
    : T extends 'uuid' | 'string'
      ? string
      : T extends 'bytes' | 'records'
        ? Buffer
        : number;

type ScalarInput<T> = T extends 'bytes' | 'records' ? Uint8Array : ScalarValue<T>;

type NullIn<F> = F extends { readonly nullable: VersionRange }
  ? null
  : F extends { readonly type: 'records' }
    ? null
    : never;

type FieldValue<F extends FieldSpec> =
  | (F extends { readonly type: 'struct'; readonly fields: infer S extends readonly FieldSpec[] }
      ? StructValue<S>
      : F extends {
            readonly type: '[]struct';
            readonly fields: infer S extends readonly FieldSpec[];
          }
        ? StructValue<S>[]
        : F['type'] extends `[]${infer E}`
          ? ScalarValue<E>[]
          : ScalarValue<F['type']>)
  | NullIn<F>;

type FieldInput<F extends FieldSpec> =
  | (F extends { readonly type: 'struct'; readonly fields: infer S extends readonly FieldSpec[] }
      ? StructInput<S>
      : F extends {
            readonly type: '[]struct';
            readonly fields: infer S extends readonly FieldSpec[];
          }
        ? readonly StructInput<S>[]
        : F['type'] extends `[]${infer E}`
          ? readonly ScalarInput<E>[]
          : ScalarInput<F['type']>)
  | NullIn<F>;

/** A decoded struct: every field of every version, those absent from the decoded version at their default. */
export type StructValue<S extends readonly FieldSpec[]> = {
  [F in S[number] as F['name']]: FieldValue<F>;
};

/** A struct to encode: any field may be left out and is then written as its default. */
export type StructInput<S extends readonly FieldSpec[]> = {
  [F in S[number] as F['name']]?: FieldInput<F>;
};

/** The decoded value of a message table. */
export type MessageValue<M extends MessageSpec> = StructValue<M['fields']>;

/** A value the encoder accepts for a message table. */
export type MessageInput<M extends MessageSpec> = StructInput<M['fields']>;
