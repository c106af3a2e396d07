/**
 * A strategy's state per offsets-bucket (`plan.state`), kept durably in the bucket's folder as
 * `compaction-state.json`: `{ strategy, state, checksum }`, the checksum being xxh32 of the UTF-8 JSON
 * of `[strategy, state]`. Written whole (a temporary file renamed over it) after a run's swaps, which
 * are durable, so it never claims more than what is on disk. It is not fdatasynced: after a power
 * loss it may be the previous one, or damaged (and then read as none); either only costs work, and
 * two fsyncs per run would compete with the commits' for the disk.
 *
 * The state is advice, never a source of truth: the engine decides alone which records survive. So
 * a missing, damaged, unreadable or foreign state (another strategy's, after a conversion) reads as none, and
 * the strategy starts over (the incremental cleaner then treats the whole log as dirty).
 */
import * as path from 'node:path';
import { xxh32 } from '../codec/index.js';
import type { FileSystem } from '../io/index.js';
import type { JsonValue } from './strategy.js';

/** Name of the state file in a bucket's folder. */
export const STATE_FILE = 'compaction-state.json';

function checksumOf(strategy: string, state: JsonValue): number {
  return xxh32(Buffer.from(JSON.stringify([strategy, state]), 'utf8'));
}

/** The state `strategy` stored in `dir`, or undefined (none, damaged, unreadable, or another strategy's). */
export async function readStrategyState(
  fs: FileSystem,
  dir: string,
  strategy: string,
): Promise<JsonValue | undefined> {
  let bytes: Buffer | null;
  try {
    bytes = await fs.readFile(path.join(dir, STATE_FILE));
  } catch {
    // Unreadable (a failing sector): as damaged. The next run's state is a new file renamed over it.
    return undefined;
  }
  if (bytes === null) return undefined;
  try {
    const parsed = JSON.parse(bytes.toString('utf8')) as {
      strategy?: unknown;
      state?: JsonValue;
      checksum?: unknown;
    };
    if (
      parsed.strategy !== strategy ||
      parsed.state === undefined ||
      parsed.checksum !== checksumOf(strategy, parsed.state)
    )
      return undefined;
    return parsed.state;
  } catch {
    // Damaged: as none (see the module comment).
    return undefined;
  }
}

/** Stores `state` of `strategy` in `dir` (whole, not fdatasynced: see the module comment). */
export async function writeStrategyState(
  fs: FileSystem,
  dir: string,
  strategy: string,
  state: JsonValue,
): Promise<void> {
  const text = JSON.stringify({ strategy, state, checksum: checksumOf(strategy, state) });
  const target = path.join(dir, STATE_FILE);
  const handle = await fs.open(`${target}.tmp`, 'w');
  try {
    await handle.writev([Buffer.from(`${text}\n`, 'utf8')], 0);
  } finally {
    await handle.close();
  }
  await fs.rename(`${target}.tmp`, target);
}
