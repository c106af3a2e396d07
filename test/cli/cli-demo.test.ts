/**
 * The demo (what `npm start` runs) as a child process in a fresh directory: it must finish well
 * under a minute, exit 0, and report that nothing was skipped; run again in the same directory, it
 * replaces its own old store. Also the `bin/offset-store.js` launcher, which runs the CLI from source
 * when there is no build.
 */
import { readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/temp-dir.js';
import { REPO_DIR, json, runCli } from './cli-harness.js';

describe('offset-store demo', () => {
  it('runs a group, kills a member, verifies at-least-once with nothing skipped, and exits 0', async () => {
    const dir = path.join(tempDir('offset-store-demo-'), 'data');
    const startedMs = performance.now();
    const run = await runCli(['demo', '--dir', dir, '--json'], { timeoutMs: 55_000 });
    expect(performance.now() - startedMs).toBeLessThan(55_000);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const result = json(run);
    expect(result.verification).toMatchObject({
      ok: true,
      records: 12 * 4000,
      skipped: [],
      unexplainedDuplicates: 0,
      finalOffsetsAtEnd: true,
      movedBuckets: 3,
      resumedAtLastCommit: 3,
    });
    expect(result.verification.consumedTotal).toBe(
      result.verification.records + result.verification.duplicates,
    );
    expect(result.killed.rebalanceMs).toBeGreaterThanOrEqual(result.sessionTimeoutMs - 500);
    expect(result.metrics.commits).toBeGreaterThan(0);
    expect(result.compaction.bytesAfter).toBeLessThan(result.compaction.bytesBefore);
    expect(statSync(path.join(dir, 'store.json')).isFile()).toBe(true);
    expect(statSync(path.join(dir, 'DEMO')).isFile()).toBe(true);

    // Run again in the same directory (as `npm start` does every time): the old demo store is replaced.
    const createdAtMs = (): number =>
      JSON.parse(readFileSync(path.join(dir, 'store.json'), 'utf8')).createdAtMs;
    const firstCreatedAtMs = createdAtMs();
    const again = await runCli(['demo', '--dir', dir, '--json'], { timeoutMs: 55_000 });
    expect(again.stderr).toBe('');
    expect(again.code).toBe(0);
    expect(json(again).verification).toMatchObject({ ok: true, records: 12 * 4000 });
    expect(createdAtMs(), 'a new store').toBeGreaterThan(firstCreatedAtMs);
    expect(statSync(path.join(dir, 'DEMO')).isFile()).toBe(true);
  }, 120_000);

  it('shows a takeover with the fewest records and with more scanners than buckets (it failed, or killed a scanner holding nothing)', async () => {
    for (const [args, movedBuckets] of [
      [['--records-per-bucket', '100'], 3],
      [['--buckets', '1', '--members', '4'], 1],
    ] as const) {
      const dir = path.join(tempDir('offset-store-demo-'), 'data');
      const run = await runCli(['demo', '--dir', dir, '--json', ...args], { timeoutMs: 55_000 });
      expect(run.stderr, args.join(' ')).toBe('');
      expect(run.code, args.join(' ')).toBe(0);
      expect(json(run).verification, args.join(' ')).toMatchObject({
        ok: true,
        movedBuckets,
        resumedAtLastCommit: movedBuckets,
      });
    }
  }, 120_000);

  it('ends with a command to look around that runs as written: npx offset-store under npm (npm start in a checkout, where offset-store is not on the PATH), offset-store otherwise', async () => {
    const { npm_lifecycle_event: _, ...plain } = process.env;
    for (const [env, command] of [
      [{ ...plain, npm_lifecycle_event: 'start' }, 'npx offset-store'],
      [plain, 'offset-store'],
    ] as const) {
      const dir = path.join(tempDir('offset-store-demo-'), 'data');
      const run = await runCli(['demo', '--dir', dir, '--records-per-bucket', '100'], {
        timeoutMs: 55_000,
        env,
      });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain(`Look around: ${command} groups describe `);
    }
  }, 120_000);

  it('bin/offset-store.js is executable and runs the CLI', async () => {
    const bin = path.join(REPO_DIR, 'bin', 'offset-store.js');
    expect(statSync(bin).mode & 0o111).not.toBe(0);
    const run = await runCli(['--help'], { executable: [bin] });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Usage: offset-store <command> --dir <path> \[options\]/);
  });
});
