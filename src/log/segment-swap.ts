/**
 * Crash-safe replacement of sealed segments by compacted ones (or by nothing, when a checkpoint
 * covers them). A crash at any step leaves either the old segment set or the new one, never a mix.
 *
 * Protocol:
 * 1. (caller) Each output is written as `<base>.log.cleaned` and fdatasynced; the directory is
 *    fsynced so the names are durable.
 * 2. The intent `compaction.swap` is written durably. This is the commit point: before it, recovery
 *    deletes `.cleaned` leftovers and keeps the old set.
 * 3. Each `.cleaned` file is renamed over its final name (replacing an input of the same name),
 *    each input that is not also an output name is unlinked, and the directory is fsynced.
 * 4. The intent is removed and the directory fsynced.
 * Recovery redoes step 3 when an intent exists (every step of it is idempotent), then step 4;
 * without an intent it deletes `.cleaned` leftovers.
 *
 * The intent (JSON) is never trusted: `parseSwapIntent` accepts only segment file names (no paths),
 * outputs named `<name>.cleaned`, a run of inputs, and a checksum over both lists; `resolveSwap`
 * then checks it against the files on disk: the inputs are a contiguous run of the segments (not
 * the last one), every output exists under its temporary or its final name, and outputs lie inside
 * the inputs' range. Anything else is CORRUPT_MESSAGE and nothing is renamed or deleted. What the
 * swap leaves (its batches) is checked like any log before it is applied (log-inspection.ts).
 *
 * | field   | meaning                                                                       |
 * |---------|-------------------------------------------------------------------------------|
 * | inputs  | names of the segments replaced, oldest first                                  |
 * | outputs | `{ name, tempName }` per compacted segment, oldest first (empty: a deletion)  |
 * | checksum| xxh32 of the UTF-8 JSON of `[inputs, outputs]`                                |
 */
import * as path from 'node:path';
import { xxh32 } from '../codec/index.js';
import { OffsetStoreError } from '../errors/index.js';
import type { FileSystem } from '../io/index.js';
import { parseSegmentFileName, segmentFileName } from './segment-name.js';
import { writeDurably } from './store-manifest.js';

/** A compacted segment written under its temporary name. */
export interface CleanedSegment {
  /** Base offset of the segment once swapped in (its final name). */
  baseOffset: number;
  /** Path of the `.cleaned` file. */
  tempPath: string;
  /** Bytes of the file. */
  sizeBytes: number;
  /** Log offset of its last batch. */
  lastLogOffset: number;
}

/** Suffix of a compacted segment not yet swapped in. */
export const CLEANED_SUFFIX = '.cleaned';
/** Name of the swap intent file in a log directory. */
export const INTENT_FILE = 'compaction.swap';

/** A validated swap intent. */
export interface SwapIntent {
  /** File names of the segments replaced, oldest first: a contiguous run of sealed segments. */
  inputs: string[];
  /** Each output's final name and temporary (`.cleaned`) name, oldest first; empty for a deletion. */
  outputs: { name: string; tempName: string }[];
}

function intentChecksum(intent: SwapIntent): number {
  return xxh32(Buffer.from(JSON.stringify([intent.inputs, intent.outputs]), 'utf8'));
}

/**
 * Swaps `inputNames` (files in `dir`) for `outputs`, per the protocol above (steps 2-4).
 * `onIntentDurable` is called once the intent is durable, before the first rename.
 */
export async function swapSegments(
  fs: FileSystem,
  dir: string,
  inputNames: readonly string[],
  outputs: readonly CleanedSegment[],
  onIntentDurable?: () => void,
): Promise<void> {
  const intent: SwapIntent = {
    inputs: [...inputNames],
    outputs: outputs.map((o) => ({
      name: segmentFileName(o.baseOffset),
      tempName: path.basename(o.tempPath),
    })),
  };
  await writeDurably(
    fs,
    path.join(dir, INTENT_FILE),
    Buffer.from(JSON.stringify({ ...intent, checksum: intentChecksum(intent) })),
  );
  onIntentDurable?.();
  await applySwap(fs, dir, intent);
}

/** Step 3 and 4 of the protocol; idempotent. */
export async function applySwap(fs: FileSystem, dir: string, intent: SwapIntent): Promise<void> {
  for (const { name, tempName } of intent.outputs) {
    if ((await fs.sizeBytes(path.join(dir, tempName))) !== null)
      await fs.rename(path.join(dir, tempName), path.join(dir, name));
  }
  const outputNames = new Set(intent.outputs.map((o) => o.name));
  for (const name of intent.inputs)
    if (!outputNames.has(name)) await fs.unlink(path.join(dir, name));
  await fs.syncDir(dir);
  await fs.unlink(path.join(dir, INTENT_FILE));
  await fs.syncDir(dir);
}

function invalid(file: string, reason: string): OffsetStoreError {
  return new OffsetStoreError(
    'CORRUPT_MESSAGE',
    `${file}: ${reason}; nothing was renamed or deleted`,
  );
}

/** Parses and checks the shape of an intent file's bytes (not yet against the disk). */
export function parseSwapIntent(file: string, bytes: Buffer): SwapIntent {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw invalid(
      file,
      'not valid JSON (writeDurably renames an intent into place whole, so this is damage)',
    );
  }
  if (typeof parsed !== 'object' || parsed === null) throw invalid(file, 'not a JSON object');
  const { inputs, outputs, checksum } = parsed as Record<string, unknown>;
  if (
    !Array.isArray(inputs) ||
    inputs.length === 0 ||
    !inputs.every((n) => typeof n === 'string' && parseSegmentFileName(n) !== undefined)
  ) {
    throw invalid(file, 'inputs must be a non-empty list of segment file names');
  }
  if (!Array.isArray(outputs)) throw invalid(file, 'outputs must be a list');
  const checked: SwapIntent['outputs'] = [];
  for (const o of outputs as unknown[]) {
    const { name, tempName } = (typeof o === 'object' && o !== null ? o : {}) as Record<
      string,
      unknown
    >;
    if (
      typeof name !== 'string' ||
      parseSegmentFileName(name) === undefined ||
      tempName !== `${name}${CLEANED_SUFFIX}`
    ) {
      throw invalid(
        file,
        `output ${JSON.stringify(o)} is not a segment file name with its ${CLEANED_SUFFIX} temporary name`,
      );
    }
    checked.push({ name, tempName });
  }
  const intent: SwapIntent = { inputs: inputs as string[], outputs: checked };
  const bases = (names: readonly string[]) => names.map((n) => parseSegmentFileName(n)!);
  const increasing = (values: number[]) => values.every((v, i) => i === 0 || v > values[i - 1]!);
  if (!increasing(bases(intent.inputs)) || !increasing(bases(intent.outputs.map((o) => o.name))))
    throw invalid(file, 'inputs and outputs must be in log order');
  if (checksum !== intentChecksum(intent)) throw invalid(file, 'checksum mismatch');
  return intent;
}

/**
 * Checks an intent against the segment files present (`segmentNames`, sorted) and the temporary
 * files present (`tempNames`); returns the segment names the log has once the swap is applied.
 * `deletableBelow` bounds a deletion (no outputs): the first segment left must begin at or below
 * it (the log offset recovery replays from, which a checkpoint covers).
 */
export function resolveSwap(
  file: string,
  intent: SwapIntent,
  segmentNames: readonly string[],
  tempNames: ReadonlySet<string>,
  deletableBelow: number,
): string[] {
  const present = new Set(segmentNames);
  const inputNames = new Set(intent.inputs);
  // An output already renamed into place lies within the inputs' range: it is not a segment the
  // inputs must be contiguous around (only an output sharing an input's name is both).
  const outputOnly = new Set(
    intent.outputs.map((o) => o.name).filter((name) => !inputNames.has(name)),
  );
  const all = [
    ...new Set([...segmentNames.filter((name) => !outputOnly.has(name)), ...intent.inputs]),
  ].sort();
  const first = all.indexOf(intent.inputs[0]!);
  if (!intent.inputs.every((name, i) => all[first + i] === name))
    throw invalid(file, 'its inputs are not a contiguous run of the segments');
  const after = all[first + intent.inputs.length];
  if (after === undefined) throw invalid(file, 'its inputs include the last (active) segment');
  for (const { name, tempName } of intent.outputs) {
    if (!tempNames.has(tempName) && !present.has(name))
      throw invalid(file, `output ${name} exists neither as ${tempName} nor under its own name`);
  }
  const outputBases = intent.outputs.map((o) => parseSegmentFileName(o.name)!);
  if (
    outputBases.length > 0 &&
    (outputBases[0] !== parseSegmentFileName(intent.inputs[0]!) ||
      outputBases.at(-1)! >= parseSegmentFileName(after)!)
  ) {
    throw invalid(file, 'its outputs do not lie within the range of its inputs');
  }
  if (outputBases.length === 0 && (first !== 0 || parseSegmentFileName(after)! > deletableBelow)) {
    throw invalid(
      file,
      `it deletes segments without outputs that recovery still needs (the log must hold every batch from log offset ${deletableBelow})`,
    );
  }
  const result = all.filter((name) => !inputNames.has(name));
  for (const { name } of intent.outputs) result.push(name);
  return result.sort();
}
