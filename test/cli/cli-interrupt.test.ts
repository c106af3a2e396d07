/**
 * Ctrl-C (SIGINT) or SIGTERM while a command has the store open: the command closes the store
 * before it exits, so what it was writing is not left half made. A backup stopped this way removes
 * its `<to>.partial` and says so; it exits 130 (143 for SIGTERM), as shells report a stopped command.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, watch } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock, OffsetStore } from '../../src/index.js';
import { tempDir } from '../support/temp-dir.js';
import { REPO_DIR } from './cli-harness.js';

const MAIN = path.join(REPO_DIR, 'src', 'cli', 'main.ts');
const BUCKETS = 64;

/** A store whose backup copies and syncs a few hundred files: long enough to be stopped halfway. */
async function seedManyBuckets(dir: string): Promise<void> {
  const store = await OffsetStore.open({ dir, bucketCount: BUCKETS, clock: new ManualClock(1) });
  for (let round = 0; round < 4; round++)
    await store.commitOffsets(
      'readers',
      Array.from({ length: BUCKETS }, (_, bucketId) => ({
        tableId: 1,
        partitionId: 0,
        bucketId,
        offset: round * 100 + bucketId,
      })),
    );
  await store.close();
}

/** Runs `offset-store backup`, sending `signal` once `<to>.partial` appears. */
function backupStoppedBy(
  signal: NodeJS.Signals,
  dir: string,
  to: string,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string; stdout: string }> {
  return new Promise((resolve) => {
    const watcher = watch(path.dirname(to), (_event, name) => {
      if (name !== `${path.basename(to)}.partial`) return;
      watcher.close();
      child.kill(signal);
    });
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', MAIN, 'backup', '--dir', dir, '--to', to],
      {
        cwd: REPO_DIR,
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (code, exitSignal) => {
      watcher.close();
      resolve({ code, signal: exitSignal, stdout, stderr });
    });
  });
}

describe('a command stopped by a signal', () => {
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)
    it(`backup stopped by ${signal}: the partial backup is removed, the exit code is ${code}, the store opens`, async () => {
      const dir = tempDir('offset-store-cli-');
      await seedManyBuckets(dir);
      const to = path.join(tempDir('offset-store-cli-'), 'backup');
      const run = await backupStoppedBy(signal, dir, to);
      expect(run.stderr).toMatch(
        new RegExp(
          `^error: stopped by ${signal}: the backup was not made; ${to}.partial removed`,
          'm',
        ),
      );
      expect(run).toMatchObject({ code, signal: null, stdout: '' });
      expect(existsSync(`${to}.partial`)).toBe(false);
      expect(existsSync(to)).toBe(false);

      // The store was closed, not abandoned: it opens with every offset, and backs up in full.
      const store = await OffsetStore.open({ dir, clock: new ManualClock(2) });
      const fetched = await store.fetchOffsets('readers', [
        { tableId: 1, partitionId: 0, bucketId: 63 },
      ]);
      expect(fetched[0]?.offset).toBe(363);
      await store.close();
    });

  /** Runs `offset-store <args>`, sending `signal` once `ready(stdout)` holds or `readyDir` is not empty. */
  function stoppedBy(
    signal: NodeJS.Signals,
    args: string[],
    ready: { stdout?: RegExp; dir?: string },
  ): Promise<{
    code: number | null;
    signal: NodeJS.Signals | null;
    stdout: string;
    stderr: string;
  }> {
    return new Promise((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], { cwd: REPO_DIR });
      let stdout = '';
      let stderr = '';
      let sent = false;
      const send = () => {
        if (sent) return;
        sent = true;
        clearInterval(poll);
        child.kill(signal);
      };
      const poll = setInterval(() => {
        if (ready.dir !== undefined && existsSync(ready.dir) && readdirSync(ready.dir).length > 0)
          send();
      }, 20);
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        if (ready.stdout?.test(stdout) === true) send();
      });
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('close', (code, exitSignal) => {
        clearInterval(poll);
        resolve({ code, signal: exitSignal, stdout, stderr });
      });
    });
  }

  it('demo stopped by SIGINT (Ctrl-C) says so and exits 130 (143 for SIGTERM, a JSON line with --json)', async () => {
    const dir = path.join(tempDir('offset-store-cli-'), 'data');
    const small = ['--buckets', '4', '--records-per-bucket', '400'];
    const run = await stoppedBy('SIGINT', ['demo', '--dir', dir, ...small], {
      stdout: / joined as member /,
    });
    expect(run).toMatchObject({ code: 130, signal: null });
    expect(run.stderr).toBe(
      `error: stopped by SIGINT: the demo did not finish; ${dir} holds its partial store, which the next demo replaces\n`,
    );
    const fresh = path.join(tempDir('offset-store-cli-'), 'data');
    const json = await stoppedBy('SIGTERM', ['demo', '--dir', fresh, '--json', ...small], {
      dir: fresh,
    });
    expect(json).toMatchObject({ code: 143, signal: null, stdout: '' });
    expect(JSON.parse(json.stderr)).toMatchObject({ error: { code: 'INTERRUPTED' } });
    // Its marker stays: the next demo in that folder replaces the partial store.
    expect(existsSync(path.join(dir, 'DEMO'))).toBe(true);
  });

  it('lab stopped by SIGINT says so, exits 130 and writes no report', async () => {
    const root = tempDir('offset-store-cli-');
    const scratch = path.join(root, 'scratch');
    const out = path.join(root, 'out');
    const run = await stoppedBy(
      'SIGINT',
      ['lab', '--scale', 'small', '--strategies', 'incremental', '--dir', scratch, '--out', out],
      { dir: scratch },
    );
    expect(run).toMatchObject({ code: 130, signal: null, stdout: '' });
    expect(run.stderr).toBe(
      `error: stopped by SIGINT: the lab did not finish and wrote no report; the next lab in ${scratch} removes the store of the run it stopped\n`,
    );
    expect(existsSync(path.join(out, 'lab-report.html'))).toBe(false);
  });
});
