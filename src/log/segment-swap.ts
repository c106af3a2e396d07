/**
 * Crash-safe replacement of sealed segments by compacted ones (or by nothing, when a checkpoint
 * covers them). A crash at any step leaves either the old segment set or the new one, never a mix.
 *
 * Protocol:
 * 1. (caller) Each output is written as `<base>.log.cleaned` and fdatasynced; the directory is
 *    fsynced so the names are durable.
 * 2. The intent `compaction.swap` (JSON: input names, output names) is written durably. This is
 *    the commit point: before it, recovery deletes `.cleaned` leftovers and keeps the old set.
 * 3. Each `.cleaned` file is renamed over its final name (replacing an input of the same name),
 *    each input that is not also an output name is unlinked, and the directory is fsynced.
 * 4. The intent is removed and the directory fsynced.
 * Recovery (`completeInterruptedSwap`) redoes step 3 when an intent exists (every step of it is
 * idempotent), then step 4; without an intent it deletes `.cleaned` leftovers.
 */
import * as path from 'node:path';
import type { FileSystem } from '../io/index.js';
import { segmentFileName } from './segment-name.js';
import { writeDurably } from './store-manifest.js';

/** A compacted segment written under its temporary name. */
export interface CleanedSegment {
  baseOffset: number;
  /** Path of the `.cleaned` file. */
  tempPath: string;
  sizeBytes: number;
  lastLogOffset: number;
}

/** Suffix of a compacted segment not yet swapped in. */
export const CLEANED_SUFFIX = '.cleaned';
const INTENT_FILE = 'compaction.swap';

interface SwapIntent {
  inputs: string[];
  outputs: { name: string; tempName: string }[];
}

/** Swaps `inputNames` (files in `dir`) for `outputs`, per the protocol above (steps 2-4). */
export async function swapSegments(fs: FileSystem, dir: string, inputNames: readonly string[], outputs: readonly CleanedSegment[]): Promise<void> {
  const intent: SwapIntent = {
    inputs: [...inputNames],
    outputs: outputs.map((o) => ({ name: segmentFileName(o.baseOffset), tempName: path.basename(o.tempPath) })),
  };
  await writeDurably(fs, path.join(dir, INTENT_FILE), Buffer.from(JSON.stringify(intent)));
  await applyIntent(fs, dir, intent);
}

async function applyIntent(fs: FileSystem, dir: string, intent: SwapIntent): Promise<void> {
  for (const { name, tempName } of intent.outputs) {
    if ((await fs.sizeBytes(path.join(dir, tempName))) !== null) await fs.rename(path.join(dir, tempName), path.join(dir, name));
  }
  const outputNames = new Set(intent.outputs.map((o) => o.name));
  for (const name of intent.inputs) if (!outputNames.has(name)) await fs.unlink(path.join(dir, name));
  await fs.syncDir(dir);
  await fs.unlink(path.join(dir, INTENT_FILE));
  await fs.syncDir(dir);
}

/** Finishes a swap that a crash interrupted after its commit point, or discards one before it. */
export async function completeInterruptedSwap(fs: FileSystem, dir: string): Promise<void> {
  const bytes = await fs.readFile(path.join(dir, INTENT_FILE));
  if (bytes !== null) {
    let intent: SwapIntent | undefined;
    try {
      intent = JSON.parse(bytes.toString('utf8')) as SwapIntent;
    } catch {
      intent = undefined; // a torn intent was never committed (writeDurably renames it into place)
    }
    if (intent !== undefined) await applyIntent(fs, dir, intent);
    else await fs.unlink(path.join(dir, INTENT_FILE));
  }
  let removed = false;
  for (const name of await fs.readdir(dir)) {
    if (name.endsWith(CLEANED_SUFFIX) || name.endsWith('.tmp')) {
      await fs.unlink(path.join(dir, name));
      removed = true;
    }
  }
  if (removed) await fs.syncDir(dir);
}
