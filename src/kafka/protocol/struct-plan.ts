/**
 * A message table compiled for one version: for each struct, its fields in table order with what
 * the codec needs at that version (present or not, nullable or not, tagged or not, element type),
 * the tagged fields in tag order, and the fewest bytes one encoded struct can take (used to refuse
 * array counts that cannot fit in the bytes present). Plans are built once per (message, version)
 * and cached; the codec walks them instead of re-reading version ranges for every value.
 *
 * Defaults live here too: a decoded field absent from the version, a field left out of a value to
 * encode, and the "is it at its default?" test deciding whether a tagged field is written.
 */
import type { FieldSpec, MessageSpec, ScalarType } from './schema.js';
import { inVersions } from './version-range.js';

/** The nil uuid, the default of a uuid field. */
export const ZERO_UUID = '00000000-0000-0000-0000-000000000000';

/** One field of a struct at one version. */
export interface FieldPlan {
  readonly name: string;
  /** Where the field sits in the message, e.g. `'topics[].partitions[].committedOffset'`. */
  readonly path: string;
  readonly spec: FieldSpec;
  /** The field's shape: a scalar type, `'array'` or `'struct'`. */
  readonly shape: ScalarType | 'array' | 'struct';
  /** Element type of an array: a scalar type or `'struct'`. */
  readonly element: ScalarType | 'struct' | undefined;
  /** Plan of a struct, or of the elements of a struct array (present fields only). */
  readonly struct: StructPlan | undefined;
  /** Whether the field is on the wire in this version. */
  readonly present: boolean;
  readonly nullable: boolean;
  /** The tag, for a field tagged in this version. */
  readonly tag: number | undefined;
}

/** One struct (or the message body) at one version. */
export interface StructPlan {
  /** The message and version, e.g. `'OffsetCommitRequest v8'`, for error messages. */
  readonly message: string;
  readonly flexible: boolean;
  /** Every field of the table, in table order. */
  readonly fields: readonly FieldPlan[];
  /** Fields on the wire in order (present, untagged). */
  readonly ordered: readonly FieldPlan[];
  /** Tagged fields of this version, in tag order. */
  readonly tagged: readonly FieldPlan[];
  readonly byTag: ReadonlyMap<number, FieldPlan>;
  /** The fewest bytes an encoding of this struct takes. */
  readonly minBytes: number;
}

const plans = new WeakMap<MessageSpec, Map<number, StructPlan>>();

/** The plan of `spec` at `version`; a RangeError for a version the table does not describe. */
export function messagePlan(spec: MessageSpec, version: number): StructPlan {
  if (!Number.isInteger(version) || !inVersions(spec.versions, version)) {
    throw new RangeError(
      `${spec.name} has no version ${version} in this table (versions ${spec.versions})`,
    );
  }
  let byVersion = plans.get(spec);
  if (byVersion === undefined) {
    byVersion = new Map();
    plans.set(spec, byVersion);
  }
  let plan = byVersion.get(version);
  if (plan === undefined) {
    plan = structPlan(
      spec.fields,
      version,
      inVersions(spec.flexible, version),
      `${spec.name} v${version}`,
      '',
    );
    byVersion.set(version, plan);
  }
  return plan;
}

function structPlan(
  specs: readonly FieldSpec[],
  version: number,
  flexible: boolean,
  message: string,
  prefix: string,
): StructPlan {
  const fields = specs.map((spec) => fieldPlan(spec, version, flexible, message, prefix));
  const ordered = fields.filter((f) => f.present && f.tag === undefined);
  const tagged = fields
    .filter((f) => f.present && f.tag !== undefined)
    .sort((a, b) => a.tag! - b.tag!);
  let minBytes = flexible ? 1 : 0;
  for (const f of ordered) minBytes += fieldMinBytes(f, flexible);
  return {
    message,
    flexible,
    fields,
    ordered,
    tagged,
    byTag: new Map(tagged.map((f) => [f.tag!, f])),
    minBytes,
  };
}

function fieldPlan(
  spec: FieldSpec,
  version: number,
  flexible: boolean,
  message: string,
  prefix: string,
): FieldPlan {
  const present = inVersions(spec.versions, version);
  const isArray = spec.type.startsWith('[]');
  const element = isArray ? (spec.type.slice(2) as ScalarType | 'struct') : undefined;
  const shape = isArray ? 'array' : (spec.type as ScalarType | 'struct');
  const hasStruct = spec.type === 'struct' || spec.type === '[]struct';
  const path = `${prefix}${spec.name}`;
  if (present && spec.tag !== undefined && !flexible)
    throw new RangeError(`${message}: ${path} is tagged in a version that is not flexible`);
  return {
    name: spec.name,
    path,
    spec,
    shape,
    element,
    struct:
      present && hasStruct
        ? structPlan(
            spec.fields ?? [],
            version,
            flexible,
            message,
            `${path}${isArray ? '[]' : ''}.`,
          )
        : undefined,
    present,
    nullable: present && inVersions(spec.nullable, version),
    tag: present && flexible ? spec.tag : undefined,
  };
}

function fieldMinBytes(f: FieldPlan, flexible: boolean): number {
  if (f.shape === 'struct') return f.nullable ? 1 : f.struct!.minBytes;
  if (f.shape === 'array') return flexible ? 1 : 4;
  return scalarMinBytes(f.shape, flexible);
}

/** The fewest bytes a value of a scalar type takes (a null or empty one for variable sizes). */
export function scalarMinBytes(type: ScalarType, flexible: boolean): number {
  switch (type) {
    case 'bool':
    case 'int8':
      return 1;
    case 'int16':
      return 2;
    case 'int32':
      return 4;
    case 'int64':
      return 8;
    case 'uuid':
      return 16;
    case 'string':
      return flexible ? 1 : 2;
    case 'bytes':
    case 'records':
      return flexible ? 1 : 4;
  }
}

/** A fresh default value of a field (see schema.ts for the rules). */
export function defaultOf(spec: FieldSpec): unknown {
  const given = spec.default;
  if (given === null) return null;
  if (spec.type.startsWith('[]')) return [];
  switch (spec.type) {
    case 'struct':
      return defaultStruct(spec.fields ?? []);
    case 'bool':
      return given ?? false;
    case 'int8':
    case 'int16':
    case 'int32':
      return given ?? 0;
    case 'int64':
      return BigInt(given ?? 0);
    case 'uuid':
      return given ?? ZERO_UUID;
    case 'string':
      return given ?? '';
    case 'bytes':
      return Buffer.alloc(0);
    case 'records':
      return null;
    default:
      return given;
  }
}

function defaultStruct(specs: readonly FieldSpec[]): Record<string, unknown> {
  const value: Record<string, unknown> = {};
  for (const spec of specs) value[spec.name] = defaultOf(spec);
  return value;
}

/** True when `value` equals the field's default (a tagged field at its default is not written). */
export function isDefault(f: FieldPlan, value: unknown): boolean {
  const given = f.spec.default;
  if (given === null || f.shape === 'records') return value === null;
  if (value === null) return false;
  switch (f.shape) {
    case 'array':
      return (value as unknown[]).length === 0;
    case 'bytes':
      return (value as Uint8Array).length === 0;
    case 'struct': {
      const struct = value as Record<string, unknown>;
      return f.struct!.fields.every(
        (g) => !g.present || struct[g.name] === undefined || isDefault(g, struct[g.name]),
      );
    }
    case 'int64':
      return value === BigInt(given ?? 0);
    default:
      return value === defaultOf(f.spec);
  }
}
