/**
 * A damaged LMDB checkpoint file never takes the process down. LMDB maps `data.mdb` and follows its
 * page numbers without bounds checks, so each damaged store is opened in a child process: a SIGBUS or
 * SIGSEGV shows up as a failed test, not as a dead test runner. The damage is checked before LMDB
 * maps the file; a damaged checkpoint is then treated like an unusable one: the store recovers by
 * replaying the whole log with a warning, or, when the log below the checkpoints was already deleted,
 * refuses to open with CORRUPT_MESSAGE (and leaves the file as it found it).
 */
import { spawn } from 'node:child_process';
import {
  cpSync,
  existsSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { OffsetStore, type OffsetStoreOptions } from '../../src/index.js';
import {
  applyHistory,
  generateHistory,
  modelOf,
  type HistoryStep,
} from '../compaction/compaction-fixtures.js';
import { seededRandom, seedFrom } from '../support/seeded-random.js';
import { fileTempDir, tempDir } from '../support/temp-dir.js';
import {
  PAGE_BYTES,
  leftmostLeafPage,
  mainRootPage,
  newestMetaPage,
  nodeOf,
} from './lmdb-pages.js';

const CHILD = path.join(import.meta.dirname, 'checkpoint-damage-child.ts');
const FLIP_CHILD = path.join(import.meta.dirname, 'checkpoint-flip-child.ts');
const CHECKPOINT = 'buckets/000/checkpoint';
const DATA_FILE = `${CHECKPOINT}/data.mdb`;
const SEAL_FILE = `${CHECKPOINT}/data.mdb.seal`;
const LOCK_FILE = `${CHECKPOINT}/lock.mdb`;
const CHILDREN_AT_ONCE = 2;

/** What the child printed. */
type Outcome =
  | {
      kind: 'opened';
      warnings: string[];
      report: {
        checkpointLogOffset?: number;
        batchesReplayed: number;
        batchCount: number;
        firstLogOffset: number;
      };
      state: [string, [string, number][]][];
    }
  | { kind: 'rejected'; warnings: string[]; code: string | undefined; message: string };

interface ChildRun {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  outcome: Outcome | undefined;
}

function runChild(
  script: string,
  args: string[],
): Promise<{
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (exitCode, signal) => resolve({ exitCode, signal, stdout, stderr }));
  });
}

async function openInChild(dir: string): Promise<ChildRun> {
  const { exitCode, signal, stdout, stderr } = await runChild(CHILD, [dir]);
  const line = stdout.trim().split('\n').at(-1);
  return { exitCode, signal, stderr, outcome: line ? (JSON.parse(line) as Outcome) : undefined };
}

/** Runs `tasks` at most CHILDREN_AT_ONCE at a time (the machine has few cores; each child starts tsx). */
async function inBatches<T>(tasks: (() => Promise<T>)[]): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: CHILDREN_AT_ONCE }, async () => {
      while (next < tasks.length) {
        const i = next++;
        results[i] = await tasks[i]!();
      }
    }),
  );
  return results;
}

function options(dir: string): OffsetStoreOptions {
  return {
    dir,
    bucketCount: 1,
    segmentBytesMax: 2048,
    compaction: { strategy: 'checkpoint', intervalMs: 3_600_000 },
    onWarning: () => {},
  };
}

/** Groups of up to 120 buckets: group images of several KiB, so the file has overflow pages too. */
const HISTORY = { seed: 17, steps: 400, groups: 8, bucketsPerTable: 40 };
const history = generateHistory(
  HISTORY.seed,
  HISTORY.steps,
  HISTORY.groups,
  HISTORY.bucketsPerTable,
);
const model = modelOf(history);

/** The child's state (pairs, as JSON carries them) as the model's maps. */
function stateMap(state: [string, [string, number][]][]): Map<string, Map<string, number>> {
  return new Map(state.map(([groupId, offsets]) => [groupId, new Map(offsets)]));
}

/**
 * The two shapes a checkpointed store can have:
 * - 'whole log': a store converted to checkpoints wrote one checkpoint and deleted nothing, and
 *   crashed (its files copied while open) before a checkpoint run or a clean close freed the log
 *   below it, so the log alone still recovers everything;
 * - 'log deleted below': compactions after more commits freed the log below the newest checkpoint,
 *   so the checkpoints are needed.
 */
type Shape = 'whole log' | 'log deleted below';

async function buildStore(dir: string, shape: Shape, steps: readonly HistoryStep[]): Promise<void> {
  if (shape === 'whole log') {
    const live = fileTempDir();
    const store = await OffsetStore.open({
      ...options(live),
      compaction: { strategy: 'log-cleaner', background: false },
    });
    await applyHistory(store, steps);
    await store.convertCompaction('checkpoint');
    cpSync(live, dir, { recursive: true });
    rmSync(path.join(dir, 'LOCK'), { force: true });
    await store.close();
    return;
  }
  const store = await OffsetStore.open(options(dir));
  await applyHistory(store, steps.slice(0, steps.length / 2));
  await store.compact();
  await applyHistory(store, steps.slice(steps.length / 2));
  await store.compact();
  await store.close();
}

/**
 * How a damage must turn out. 'damaged': recognized before LMDB maps the file (the store replays the
 * whole log with a warning, or refuses when the log below was deleted); 'opens': the checkpoint
 * checks its own values and an older one or the log takes over, so the store opens with every
 * offset; 'either': depends on what the damaged bytes held, but never a crash or a wrong state.
 */
type Expected = 'damaged' | 'opens' | 'either';

const seed = seedFrom('CHECKPOINT_DAMAGE_SEED');
const damages: Record<
  string,
  { apply: (bytes: Buffer) => Buffer; sealed: Expected; unsealed: Expected }
> = {
  'truncated to 8 KiB': {
    apply: (bytes) => bytes.subarray(0, 8192),
    sealed: 'damaged',
    unsealed: 'damaged',
  },
  'truncated to 0 bytes': { apply: () => Buffer.alloc(0), sealed: 'damaged', unsealed: 'damaged' },
  'overwritten with random bytes': {
    apply: (bytes) => {
      const random = seededRandom(seed);
      return Buffer.from(Array.from({ length: bytes.length }, () => Math.floor(random() * 256)));
    },
    sealed: 'damaged',
    unsealed: 'damaged',
  },
  "the main tree's root page zeroed": {
    apply: (bytes) => zeroPage(bytes, mainRootPage(bytes)),
    sealed: 'damaged',
    unsealed: 'damaged',
  },
  'a byte of the newest meta page flipped (its main tree root)': {
    apply: (bytes) => flip(bytes, newestMetaPage(bytes) * PAGE_BYTES + 136, 0x40),
    sealed: 'damaged',
    unsealed: 'damaged',
  },
  // Sound structure, wrong content: only the seal sees it; without one, each checkpoint's own checksum does.
  'a byte of a key flipped': {
    apply: (bytes) => flip(bytes, nodeOf(bytes, leftmostLeafPage(bytes), 0).keyEnd - 1, 0x01),
    sealed: 'damaged',
    unsealed: 'opens',
  },
  // A tree page, a value's overflow page, or a free page: a refusal, a fallback, or nothing to see.
  'a page in the middle zeroed': {
    apply: (bytes) => zeroPage(bytes, Math.floor(bytes.length / PAGE_BYTES / 2)),
    sealed: 'either',
    unsealed: 'either',
  },
};

function zeroPage(bytes: Buffer, page: number): Buffer {
  const copy = Buffer.from(bytes);
  copy.fill(0, page * PAGE_BYTES, (page + 1) * PAGE_BYTES);
  return copy;
}

function flip(bytes: Buffer, position: number, mask: number): Buffer {
  const copy = Buffer.from(bytes);
  copy[position] = copy[position]! ^ mask;
  return copy;
}

const bases = new Map<Shape, string>();

beforeAll(async () => {
  for (const shape of ['whole log', 'log deleted below'] as const) {
    const dir = fileTempDir(`offset-store-damage-${shape.replaceAll(' ', '-')}-`);
    await buildStore(dir, shape, history);
    bases.set(shape, dir);
  }
});

/** A copy of the base store of `shape`, with `damage` applied to its data.mdb (and its seal removed if asked). */
function damagedCopy(shape: Shape, damage: string, { removeSeal = false } = {}): string {
  const dir = tempDir();
  cpSync(bases.get(shape)!, dir, { recursive: true });
  if (removeSeal) rmSync(path.join(dir, SEAL_FILE), { force: true });
  const dataPath = path.join(dir, DATA_FILE);
  writeFileSync(dataPath, damages[damage]!.apply(readFileSync(dataPath)));
  return dir;
}

function expectNoCrash(
  run: ChildRun,
  context: string,
): asserts run is ChildRun & { outcome: Outcome } {
  expect(run.signal, `${context}: killed by a signal; stderr: ${run.stderr}`).toBeNull();
  expect(run.exitCode, `${context}: exit code; stderr: ${run.stderr}`).toBe(0);
  expect(run.outcome, `${context}: printed an outcome`).toBeDefined();
}

function expectReplayedWholeLog(run: ChildRun, context: string): void {
  expectNoCrash(run, context);
  const outcome = run.outcome!;
  expect(outcome.kind, `${context}: ${JSON.stringify(outcome)}`).toBe('opened');
  if (outcome.kind !== 'opened') return;
  expect(outcome.warnings.join('\n'), context).toMatch(/data\.mdb \(\d+ bytes\) is damaged: /);
  expect(outcome.report.checkpointLogOffset, context).toBeUndefined();
  expect(outcome.report.firstLogOffset, context).toBe(0);
  expect(outcome.report.batchesReplayed, context).toBe(outcome.report.batchCount);
  expect(stateMap(outcome.state), context).toEqual(model);
}

function expectRefused(run: ChildRun, context: string): void {
  expectNoCrash(run, context);
  const outcome = run.outcome!;
  expect(outcome.kind, `${context}: ${JSON.stringify(outcome)}`).toBe('rejected');
  if (outcome.kind !== 'rejected') return;
  expect(outcome.code, context).toBe('CORRUPT_MESSAGE');
  expect(outcome.warnings.join('\n'), context).toMatch(/data\.mdb \(\d+ bytes\) is damaged: /);
}

function cases(): { damage: string; shape: Shape }[] {
  return Object.keys(damages).flatMap((damage) =>
    (['whole log', 'log deleted below'] as const).map((shape) => ({ damage, shape })),
  );
}

function expectOutcome(run: ChildRun, expected: Expected, shape: Shape, context: string): void {
  if (expected === 'damaged') {
    if (shape === 'whole log') expectReplayedWholeLog(run, context);
    else expectRefused(run, context);
    return;
  }
  expectNoCrash(run, context);
  const outcome = run.outcome!;
  if (expected === 'opens' || outcome.kind === 'opened') {
    expect(outcome.kind, `${context}: ${JSON.stringify(outcome)}`).toBe('opened');
    if (outcome.kind === 'opened') expect(stateMap(outcome.state), context).toEqual(model);
  } else {
    expect(outcome, context).toMatchObject({ kind: 'rejected', code: 'CORRUPT_MESSAGE' });
    expect(shape, `${context}: only a deleted log below can leave nothing to recover from`).toBe(
      'log deleted below',
    );
  }
}

describe(`a damaged checkpoint file (seed ${seed}, replay with CHECKPOINT_DAMAGE_SEED=${seed})`, () => {
  it('as sealed by the store, is refused or recovered from for each kind of damage, never crashing the process', async () => {
    const runs = await inBatches(
      cases().map(({ damage, shape }) => async () => {
        const dir = damagedCopy(shape, damage);
        const damagedBytes = readFileSync(path.join(dir, DATA_FILE));
        const first = await openInChild(dir);
        // After recovering from the log, the store writes a fresh checkpoint and the next open uses it.
        const second = shape === 'whole log' ? await openInChild(dir) : undefined;
        const kept = (file: string): boolean =>
          existsSync(path.join(dir, file)) &&
          readFileSync(path.join(dir, file)).equals(damagedBytes);
        return {
          damage,
          shape,
          first,
          second,
          untouched: kept(DATA_FILE),
          setAside: kept(`${DATA_FILE}.damaged`),
        };
      }),
    );
    for (const { damage, shape, first, second, untouched, setAside } of runs) {
      const context = `${damage}, ${shape}`;
      expectOutcome(first, damages[damage]!.sealed, shape, context);
      if (damages[damage]!.sealed !== 'damaged') continue;
      if (shape === 'whole log') {
        expect(setAside, `${context}: the damaged file is kept as data.mdb.damaged`).toBe(true);
        expectNoCrash(second!, `${context}, second open`);
        expect(second!.outcome, `${context}, second open`).toMatchObject({
          kind: 'opened',
          warnings: [],
          report: { batchesReplayed: 0 },
        });
        expect(
          stateMap((second!.outcome as Outcome & { kind: 'opened' }).state),
          `${context}, second open`,
        ).toEqual(model);
      } else {
        expect(untouched, `${context}: the refused file is left as it was`).toBe(true);
      }
    }
  });

  it('without a seal (a store written before seals, or a crash before the seal was written) is checked page by page, never crashing', async () => {
    const runs = await inBatches(
      cases().map(({ damage, shape }) => async () => ({
        damage,
        shape,
        run: await openInChild(damagedCopy(shape, damage, { removeSeal: true })),
      })),
    );
    for (const { damage, shape, run } of runs)
      expectOutcome(run, damages[damage]!.unsealed, shape, `${damage}, ${shape}, no seal`);
  });

  it('without a seal, with one byte flipped in a page LMDB reads, is refused or recovered from, never crashing the process', async () => {
    const flips = Number(process.env.CHECKPOINT_FLIPS ?? 40);
    for (const shape of ['whole log', 'log deleted below'] as const) {
      const workDir = tempDir();
      const args = [
        bases.get(shape)!,
        workDir,
        String(seed),
        String(flips),
        ...Object.values(HISTORY).map(String),
      ];
      const { exitCode, signal, stdout, stderr } = await runChild(FLIP_CHILD, args);
      const lines = stdout.trim().split('\n');
      const context = `${shape}, seed ${seed}: last ${lines.findLast((l) => l.startsWith('flip')) ?? 'none'}`;
      expect(signal, `${context}: killed by a signal; stderr: ${stderr}`).toBeNull();
      expect(exitCode, `${context}: exit code; stderr: ${stderr}`).toBe(0);
      const outcomes = lines.flatMap((line, i) =>
        line.startsWith('flip') ? [] : [`${lines[i - 1]}: ${line}`],
      );
      expect(outcomes, context).toHaveLength(flips);
      expect(
        outcomes.filter((o) => o.includes(': bad')),
        context,
      ).toEqual([]);
      if (shape === 'whole log')
        expect(
          outcomes.filter((o) => o.endsWith('ok refused')),
          `${context}: the whole log always recovers`,
        ).toEqual([]);
    }
  });
});

describe('a damaged lock.mdb', () => {
  it('is rebuilt by LMDB: the store opens from its checkpoint as if nothing happened', async () => {
    const lockDamages: Record<string, (file: string) => void> = {
      'truncated to 0 bytes': (file) => truncateSync(file, 0),
      'truncated to 100 bytes': (file) => truncateSync(file, 100),
      'overwritten with random bytes': (file) => {
        const random = seededRandom(seed);
        writeFileSync(
          file,
          Buffer.from(
            Array.from({ length: statSync(file).size }, () => Math.floor(random() * 256)),
          ),
        );
      },
    };
    const runs = await inBatches(
      Object.entries(lockDamages).map(([damage, apply]) => async () => {
        const dir = tempDir();
        cpSync(bases.get('log deleted below')!, dir, { recursive: true });
        apply(path.join(dir, LOCK_FILE));
        return { damage, run: await openInChild(dir) };
      }),
    );
    for (const { damage, run } of runs) {
      expectNoCrash(run, `lock.mdb ${damage}`);
      expect(run.outcome, `lock.mdb ${damage}`).toMatchObject({
        kind: 'opened',
        warnings: [],
        report: { batchesReplayed: 0 },
      });
      expect(
        stateMap((run.outcome as Outcome & { kind: 'opened' }).state),
        `lock.mdb ${damage}`,
      ).toEqual(model);
    }
  });
});
