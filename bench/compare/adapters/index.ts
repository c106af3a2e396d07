/**
 * The catalogue of stores under comparison, by id. The peers are imported statically; offset-store
 * is imported dynamically so that a missing or broken `src/index.ts` makes it "unavailable" (with the
 * reason printed) instead of stopping the peers' run.
 */
import { SUBJECT_ID, type AdapterSpec } from '../adapter.js';
import { FloorAdapter } from './floor-adapter.js';
import { LevelAdapter } from './level-adapter.js';
import { LmdbAdapter } from './lmdb-adapter.js';
import { SqliteAdapter } from './sqlite-adapter.js';

/** The peers, in report order. */
export const PEER_SPECS: readonly AdapterSpec[] = [
  { id: 'lmdb', create: () => new LmdbAdapter('transactionSync') },
  { id: 'lmdb-async', variantOf: 'lmdb', create: () => new LmdbAdapter('transaction') },
  { id: 'sqlite', create: () => new SqliteAdapter() },
  { id: 'level', create: () => new LevelAdapter() },
  { id: 'floor', writeOnly: true, create: () => new FloorAdapter() },
];

/** A store that could not be loaded, and why. */
export interface UnavailableAdapter {
  id: string;
  reason: string;
}

/** What `loadAdapterSpecs` found. */
export interface AdapterCatalog {
  specs: AdapterSpec[];
  unavailable: UnavailableAdapter[];
}

/** Loads the offset-store adapter, or says why it cannot be loaded. */
export async function loadSubjectSpec(): Promise<AdapterSpec | UnavailableAdapter> {
  // A variable specifier keeps this import out of static resolution.
  const modulePath = './offset-store-adapter.js';
  try {
    const module = (await import(modulePath)) as typeof import('./offset-store-adapter.js');
    return { id: SUBJECT_ID, create: () => new module.OffsetStoreAdapterImpl() };
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const reason =
      code === 'ERR_MODULE_NOT_FOUND'
        ? `src/index.ts not loadable yet (${(error as Error).message.split('\n')[0]})`
        : `offset-store adapter failed to load: ${String(error)}`;
    return { id: SUBJECT_ID, reason };
  }
}

/** The subject first (when it loads), then the peers; `ids` filters by id. */
export async function loadAdapterSpecs(ids?: readonly string[]): Promise<AdapterCatalog> {
  const wanted = (id: string): boolean => ids === undefined || ids.includes(id);
  const specs: AdapterSpec[] = [];
  const unavailable: UnavailableAdapter[] = [];
  if (wanted(SUBJECT_ID)) {
    const subject = await loadSubjectSpec();
    if ('create' in subject) specs.push(subject);
    else unavailable.push(subject);
  }
  for (const spec of PEER_SPECS) if (wanted(spec.id)) specs.push(spec);
  return { specs, unavailable };
}

/** One adapter by id, for child processes; throws when it is unknown or unavailable. */
export async function loadAdapterSpec(id: string): Promise<AdapterSpec> {
  const { specs, unavailable } = await loadAdapterSpecs([id]);
  const spec = specs[0];
  if (spec !== undefined) return spec;
  const why =
    unavailable[0]?.reason ??
    `unknown adapter id '${id}' (known: ${[SUBJECT_ID, ...PEER_SPECS.map((s) => s.id)].join(', ')})`;
  throw new Error(why);
}
