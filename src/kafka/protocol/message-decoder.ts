/**
 * Decodes a message of a table at one version (the encodings are tabled in message-encoder.ts).
 * Nothing is trusted: every length and count is compared with the bytes present before it is used
 * (byte-reader.ts), strings longer than 32767 bytes are refused as in Kafka, and so is a string of
 * malformed UTF-8 whose value (each malformed sequence read as U+FFFD, as Kafka's broker reads it)
 * would take more than 32767 bytes to write back: a response echoing it (a topic name, a group id)
 * could not be written, and by then the request might have changed the store. Tags this table does
 * not know are skipped by their size and a known one is read within its size, and a message must
 * end exactly where its buffer does: bytes left over mean the sender and the table disagree, and a
 * refused request is better than a silent misreading (Kafka's broker ignores them). Any failure is
 * a KafkaDecodeError (INVALID_REQUEST). Fields the version lacks come back at their defaults, so
 * one value shape serves every version.
 *
 * Speed: each struct plan (a struct of a message at one version) is compiled once into a function
 * that reads its fields in wire order into locals and returns one object literal of all of them:
 * every object of a struct type then has one hidden class, property stores are not keyed, and
 * immutable defaults are shared constants. Reading the fields of a plan one by one in a loop,
 * storing `struct[name] = value`, took ~1 us per partition of an OffsetCommit; the compiled
 * function about a tenth of that. The generated code names nothing but numbered locals and the
 * constants it is handed (field names appear only as JSON-quoted keys of the object literal), and
 * plans come from this codebase's own tables. Tagged fields (rare) are read by the generic
 * readField after the literal is built.
 */
import {
  STRING_BYTES_MAX,
  type MessageSpec,
  type MessageValue,
  type ScalarType,
} from './schema.js';
import { ByteReader } from './byte-reader.js';
import {
  defaultOf,
  messagePlan,
  scalarMinBytes,
  type FieldPlan,
  type StructPlan,
} from './struct-plan.js';

/** Decodes the body of a message from `buf[position, end)`, which it must fill exactly. */
export function decodeMessage<M extends MessageSpec>(
  spec: M,
  version: number,
  buf: Buffer,
  position = 0,
  end = buf.length,
): MessageValue<M> {
  const plan = messagePlan(spec, version);
  const reader = new ByteReader(buf, position, end, plan.message);
  const value = structReader(plan)(reader);
  if (reader.remaining !== 0) reader.fail(`${reader.remaining} bytes left after the message`);
  return value as MessageValue<M>;
}

type StructReader = (r: ByteReader) => Record<string, unknown>;

const readers = new WeakMap<StructPlan, StructReader>();

/** The compiled reader of a struct plan (compiled on first use). */
function structReader(plan: StructPlan): StructReader {
  let reader = readers.get(plan);
  if (reader === undefined) {
    reader = compileReader(plan);
    readers.set(plan, reader);
  }
  return reader;
}

/** True for defaults that no caller can change (shared safely between decoded values). */
function isImmutable(value: unknown): boolean {
  return value === null || typeof value !== 'object';
}

function compileReader(plan: StructPlan): StructReader {
  const constants: unknown[] = [];
  const ref = (value: unknown): string => `c[${constants.push(value) - 1}]`;
  const lines = plan.fields.map((f, i) => {
    if (f.present && f.tag === undefined)
      return `const v${i} = ${readExpression(plan.flexible, f, ref)};`;
    const fallback = defaultOf(f.spec);
    return `const v${i} = ${isImmutable(fallback) ? ref(fallback) : `${ref(defaultOf)}(${ref(f.spec)})`};`;
  });
  const literal = `{ ${plan.fields.map((f, i) => `${JSON.stringify(f.name)}: v${i}`).join(', ')} }`;
  // Nearly every tagged-field section is empty (one 0 byte): that case costs one byte check.
  if (plan.flexible)
    lines.push(
      `const o = ${literal};`,
      `if (!r.noTaggedFields()) ${ref(readTagged)}(${ref(plan)}, o, r);`,
      'return o;',
    );
  else lines.push(`return ${literal};`);
  return new Function('c', `return function read(r) {\n  ${lines.join('\n  ')}\n};`)(
    constants,
  ) as StructReader;
}

/** The expression reading field `f` (present, untagged) from reader `r`. */
function readExpression(flexible: boolean, f: FieldPlan, ref: (value: unknown) => string): string {
  const what = ref(f.path);
  switch (f.shape) {
    case 'struct': {
      const read = `${ref(structReader(f.struct!))}(r)`;
      return f.nullable ? `(r.int8(${ref(`${f.path} presence`)}) < 0 ? null : ${read})` : read;
    }
    case 'array':
      return f.element === 'struct'
        ? `${ref(readStructArray)}(r, ${flexible}, ${ref(f)}, ${ref(structReader(f.struct!))})`
        : `${ref(readScalarArray)}(r, ${flexible}, ${ref(f)})`;
    case 'bool':
      return `r.bool(${what})`;
    case 'int8':
      return `r.int8(${what})`;
    case 'int16':
      return `r.int16(${what})`;
    case 'int32':
      return `r.int32(${what})`;
    case 'int64':
      return `r.int64(${what})`;
    case 'uuid':
      return `r.uuid(${what})`;
    default:
      return `${ref(readScalar)}(${flexible}, ${JSON.stringify(f.shape)}, ${f.nullable}, ${what}, r)`;
  }
}

function readTagged(plan: StructPlan, struct: Record<string, unknown>, r: ByteReader): void {
  const count = r.unsignedVarint('tagged field count');
  // A tagged field takes at least 2 bytes (its tag and its size), and counts as an array element.
  r.checkCount(count, 2, 'tagged fields');
  for (let i = 0; i < count; i++) {
    const tag = r.unsignedVarint('tag');
    const bytes = r.unsignedVarint(`size of tagged field ${tag}`);
    const f = plan.byTag.get(tag);
    if (f === undefined) r.skip(bytes, `unknown tagged field ${tag}`);
    else struct[f.name] = r.within(bytes, f.path, () => readField(true, f, r));
  }
}

/** Reads any field (the tagged ones; untagged ones go through the compiled readers). */
function readField(flexible: boolean, f: FieldPlan, r: ByteReader): unknown {
  if (f.shape === 'struct') {
    if (f.nullable && r.int8(`${f.path} presence`) < 0) return null;
    return structReader(f.struct!)(r);
  }
  if (f.shape !== 'array') return readScalar(flexible, f.shape, f.nullable, f.path, r);
  return f.element === 'struct'
    ? readStructArray(r, flexible, f, structReader(f.struct!))
    : readScalarArray(r, flexible, f);
}

/** An array's element count, or -1 for a null array (checked against the field's nullability). */
function arrayCount(r: ByteReader, flexible: boolean, f: FieldPlan, elementBytes: number): number {
  const start = r.position;
  const count = flexible ? r.unsignedVarint(f.path) - 1 : r.int32(f.path);
  if (count < 0) {
    readNull(f.nullable, count, f.path, start, r);
    return -1;
  }
  r.checkCount(count, elementBytes, f.path);
  return count;
}

function readStructArray(
  r: ByteReader,
  flexible: boolean,
  f: FieldPlan,
  read: StructReader,
): unknown[] | null {
  const count = arrayCount(r, flexible, f, f.struct!.minBytes);
  if (count < 0) return null;
  const elements: unknown[] = new Array(count);
  for (let i = 0; i < count; i++) elements[i] = read(r);
  return elements;
}

function readScalarArray(r: ByteReader, flexible: boolean, f: FieldPlan): unknown[] | null {
  const count = arrayCount(r, flexible, f, scalarMinBytes(f.element as ScalarType, flexible));
  if (count < 0) return null;
  const elements: unknown[] = new Array(count);
  for (let i = 0; i < count; i++)
    elements[i] = readScalar(flexible, f.element as ScalarType, false, f.path, r);
  return elements;
}

function readScalar(
  flexible: boolean,
  type: ScalarType,
  nullable: boolean,
  what: string,
  r: ByteReader,
): unknown {
  switch (type) {
    case 'bool':
      return r.bool(what);
    case 'int8':
      return r.int8(what);
    case 'int16':
      return r.int16(what);
    case 'int32':
      return r.int32(what);
    case 'int64':
      return r.int64(what);
    case 'uuid':
      return r.uuid(what);
    case 'string':
      return readString(r, flexible, nullable, what);
    case 'bytes':
    case 'records': {
      const start = r.position;
      const bytes = flexible ? r.unsignedVarint(what) - 1 : r.int32(what);
      if (bytes < 0) return readNull(nullable, bytes, what, start, r);
      return r.bytes(bytes, what);
    }
  }
}

/**
 * A string field (null when `nullable` allows it): at most 32767 bytes, and refused when its value,
 * each malformed UTF-8 sequence read as U+FFFD, would take more than that to write back.
 */
export function readString(
  r: ByteReader,
  flexible: boolean,
  nullable: boolean,
  what: string,
): string | null {
  const start = r.position;
  const bytes = flexible ? r.unsignedVarint(what) - 1 : r.int16(what);
  if (bytes < 0) return readNull(nullable, bytes, what, start, r);
  if (bytes > STRING_BYTES_MAX)
    r.fail(`${what}: string of ${bytes} bytes, more than ${STRING_BYTES_MAX}`, start);
  const value = r.utf8(bytes, what);
  // Each malformed byte reads as U+FFFD, three bytes when written back: only a string of more
  // than a third of the limit can outgrow it.
  if (bytes * 3 > STRING_BYTES_MAX && Buffer.byteLength(value) > STRING_BYTES_MAX)
    r.fail(
      `${what}: malformed UTF-8 of ${bytes} bytes that would take ${Buffer.byteLength(value)} to write back, more than ${STRING_BYTES_MAX}`,
      start,
    );
  return value;
}

function readNull(
  nullable: boolean,
  length: number,
  what: string,
  start: number,
  r: ByteReader,
): null {
  if (length !== -1) r.fail(`${what}: negative length ${length}`, start);
  if (!nullable) r.fail(`${what}: null, which this version does not allow`, start);
  return null;
}
