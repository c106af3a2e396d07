/**
 * Child of checkpoint-damage.test.ts: flips one byte at a time in the pages LMDB reads of an unsealed copy
 * of a checkpointed store and opens each copy, in this one process. argv: base store dir, work dir,
 * seed, flip count, and the history (seed, steps, groups, buckets per table) the base store holds.
 * Prints one line per flip, written synchronously before the open, so that if LMDB crashes on a flip
 * the parent sees which one: `flip <i> page <p> byte <b> xor <x>` then `ok opened`, `ok refused` or
 * `bad <what>`.
 */
import { cpSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import * as path from 'node:path';
import { OffsetStore } from '../../src/index.js';
import { generateHistory, modelOf, stateOf } from '../compaction/compaction-fixtures.js';
import { seededRandom } from '../support/seeded-random.js';
import { isDeepStrictEqual } from 'node:util';

const [baseDir, workDir, seed, count, historySeed, steps, groups, bucketsPerTable] =
  process.argv.slice(2);
const PAGE_BYTES = 4096;
const CHECKPOINT = 'buckets/000/checkpoint';
const random = seededRandom(Number(seed));
const model = modelOf(
  generateHistory(Number(historySeed), Number(steps), Number(groups), Number(bucketsPerTable)),
);
const original = readFileSync(path.join(baseDir!, CHECKPOINT, 'data.mdb'));

/**
 * The bytes of a page that LMDB interprets: a meta page's header and meta; a tree page's header,
 * pointers and nodes; the header of an overflow run's first page.
 */
function usedRanges(page: number): [number, number][] {
  const start = page * PAGE_BYTES;
  const flags = original.readUInt16LE(start + 18);
  if (flags & 0x08) return [[start, start + 24 + 168]];
  if (original.readBigUInt64LE(start) !== BigInt(page)) return [];
  if (flags & 0x04) return [[start, start + 24]];
  if (flags & 0x03) {
    const lower = original.readUInt16LE(start + 20);
    const upper = original.readUInt16LE(start + 22);
    return [
      [start, start + 24 + lower],
      [start + 24 + upper, start + PAGE_BYTES],
    ];
  }
  return [];
}

const candidates: [number, number][] = [];
for (let page = 0; page < original.length / PAGE_BYTES; page++)
  candidates.push(...usedRanges(page));
const say = (line: string): void => void writeSync(1, `${line}\n`);

for (let i = 0; i < Number(count); i++) {
  const [from, to] = candidates[Math.floor(random() * candidates.length)]!;
  const position = from + Math.floor(random() * (to - from));
  const xor = 1 + Math.floor(random() * 255);
  const dir = path.join(workDir!, String(i));
  cpSync(baseDir!, dir, { recursive: true });
  rmSync(path.join(dir, CHECKPOINT, 'data.mdb.seal'));
  const bytes = Buffer.from(original);
  bytes[position] = bytes[position]! ^ xor;
  writeFileSync(path.join(dir, CHECKPOINT, 'data.mdb'), bytes);
  say(
    `flip ${i} page ${Math.floor(position / PAGE_BYTES)} byte ${position % PAGE_BYTES} xor ${xor}`,
  );
  try {
    const store = await OffsetStore.open({
      dir,
      bucketCount: 1,
      segmentBytesMax: 2048,
      compaction: { strategy: 'checkpoint', intervalMs: 3_600_000 },
      onWarning: () => {},
    });
    const state = await stateOf(store);
    await store.close();
    say(isDeepStrictEqual(state, model) ? 'ok opened' : 'bad opened with a different state');
  } catch (error) {
    const code = (error as { code?: string }).code;
    say(code === 'CORRUPT_MESSAGE' ? 'ok refused' : `bad ${(error as Error).message}`);
  }
  rmSync(dir, { recursive: true, force: true });
}
