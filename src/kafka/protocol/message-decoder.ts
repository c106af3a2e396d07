/**
 * Decodes a message of a table at one version (the encodings are tabled in message-encoder.ts).
 * Nothing is trusted: every length and count is compared with the bytes present before it is used
 * (byte-reader.ts), strings longer than 32767 bytes are refused as in Kafka, tags this table does
 * not know are skipped by their size and a known one is read within its size, and a message must
 * end exactly where its buffer does: bytes left over mean the sender and the table disagree, and a
 * refused request is better than a silent misreading (Kafka's broker ignores them). Any failure is
 * a KafkaDecodeError (INVALID_REQUEST). Fields the version lacks come back at their defaults, so
 * one value shape serves every version.
 */
import { STRING_BYTES_MAX, type MessageSpec, type MessageValue, type ScalarType } from './schema.js';
import { ByteReader } from './byte-reader.js';
import { defaultOf, messagePlan, scalarMinBytes, type FieldPlan, type StructPlan } from './struct-plan.js';

/** Decodes the body of a message from `buf[position, end)`, which it must fill exactly. */
export function decodeMessage<M extends MessageSpec>(spec: M, version: number, buf: Buffer, position = 0, end = buf.length): MessageValue<M> {
  const plan = messagePlan(spec, version);
  const reader = new ByteReader(buf, position, end, `${spec.name} v${version}`);
  const value = readStruct(plan, reader);
  if (reader.remaining !== 0) reader.fail(`${reader.remaining} bytes left after the message`);
  return value as MessageValue<M>;
}

function readStruct(plan: StructPlan, r: ByteReader): Record<string, unknown> {
  const struct: Record<string, unknown> = {};
  for (const f of plan.fields) struct[f.name] = f.present && f.tag === undefined ? readField(plan.flexible, f, r) : defaultOf(f.spec);
  if (plan.flexible) readTagged(plan, struct, r);
  return struct;
}

function readTagged(plan: StructPlan, struct: Record<string, unknown>, r: ByteReader): void {
  const count = r.unsignedVarint('tagged field count');
  for (let i = 0; i < count; i++) {
    const tag = r.unsignedVarint('tag');
    const bytes = r.unsignedVarint(`size of tagged field ${tag}`);
    const f = plan.byTag.get(tag);
    if (f === undefined) r.skip(bytes, `unknown tagged field ${tag}`);
    else struct[f.name] = r.within(bytes, f.path, () => readField(true, f, r));
  }
}

function readField(flexible: boolean, f: FieldPlan, r: ByteReader): unknown {
  if (f.shape === 'struct') {
    if (f.nullable && r.int8(`${f.path} presence`) < 0) return null;
    return readStruct(f.struct!, r);
  }
  if (f.shape !== 'array') return readScalar(flexible, f.shape, f.nullable, f.path, r);
  const start = r.position;
  const count = flexible ? r.unsignedVarint(f.path) - 1 : r.int32(f.path);
  if (count < 0) return readNull(f.nullable, count, f.path, start, r);
  r.checkCount(count, f.element === 'struct' ? f.struct!.minBytes : scalarMinBytes(f.element!, flexible), f.path);
  const elements: unknown[] = [];
  if (f.element === 'struct') {
    for (let i = 0; i < count; i++) elements.push(readStruct(f.struct!, r));
  } else {
    for (let i = 0; i < count; i++) elements.push(readScalar(flexible, f.element!, false, f.path, r));
  }
  return elements;
}

function readScalar(flexible: boolean, type: ScalarType, nullable: boolean, what: string, r: ByteReader): unknown {
  switch (type) {
    case 'bool': return r.bool(what);
    case 'int8': return r.int8(what);
    case 'int16': return r.int16(what);
    case 'int32': return r.int32(what);
    case 'int64': return r.int64(what);
    case 'uuid': return r.uuid(what);
    case 'string': {
      const start = r.position;
      const bytes = flexible ? r.unsignedVarint(what) - 1 : r.int16(what);
      if (bytes < 0) return readNull(nullable, bytes, what, start, r);
      if (bytes > STRING_BYTES_MAX) r.fail(`${what}: string of ${bytes} bytes, more than ${STRING_BYTES_MAX}`, start);
      return r.utf8(bytes, what);
    }
    case 'bytes':
    case 'records': {
      const start = r.position;
      const bytes = flexible ? r.unsignedVarint(what) - 1 : r.int32(what);
      if (bytes < 0) return readNull(nullable, bytes, what, start, r);
      return r.bytes(bytes, what);
    }
  }
}

function readNull(nullable: boolean, length: number, what: string, start: number, r: ByteReader): null {
  if (length !== -1) r.fail(`${what}: negative length ${length}`, start);
  if (!nullable) r.fail(`${what}: null, which this version does not allow`, start);
  return null;
}
