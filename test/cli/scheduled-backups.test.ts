/**
 * Backups on a schedule (serve --backup-dir): one per interval on the clock, named after its time; a
 * failed one is reported and the schedule goes on; one asked for while another runs is skipped; close
 * stops the schedule.
 */
import { mkdirSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock, NodeFileSystem, OffsetStore } from '../../src/index.js';
import { ScheduledBackups, backupName } from '../../src/cli/scheduled-backups.js';
import { tempDir } from '../support/temp-dir.js';

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(condition()).toBe(true);
}

describe('ScheduledBackups', () => {
  it('backs up every interval, keeps the newest, reports a failure and goes on, stops when closed', async () => {
    const clock = new ManualClock(Date.UTC(2026, 11, 4, 3, 0, 0));
    const store = await OffsetStore.open({ dir: tempDir(), bucketCount: 2, clock });
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    const dir = path.join(tempDir(), 'backups');
    const done: string[] = [];
    const problems: string[] = [];
    const schedule = new ScheduledBackups({
      store,
      dir,
      everyMs: 60_000,
      keep: 2,
      clock,
      fs: new NodeFileSystem(),
      onBackup: (report) => done.push(path.basename(report.dir)),
      onProblem: (message) => problems.push(message),
    });
    expect(backupName(clock.nowMs())).toBe('offsets-2026-12-04T03.00.00.000Z');
    clock.advance(59_999);
    await new Promise((r) => setTimeout(r, 50));
    expect(done).toEqual([]);
    for (let i = 1; i <= 3; i++) {
      clock.advance(i === 1 ? 1 : 60_000);
      await until(() => done.length === i);
    }
    expect(done).toEqual([
      'offsets-2026-12-04T03.01.00.000Z',
      'offsets-2026-12-04T03.02.00.000Z',
      'offsets-2026-12-04T03.03.00.000Z',
    ]);
    expect(readdirSync(dir).sort()).toEqual(done.slice(1));
    // A backup asked for while one runs is skipped; one asked for at the same clock time as the last
    // is named a millisecond later.
    const first = schedule.now();
    const second = schedule.now();
    await Promise.all([first, second]);
    expect(problems).toEqual(['a backup is already running: this one is skipped']);
    expect(done[3]).toBe('offsets-2026-12-04T03.03.00.001Z');
    // The name of the next one is taken: it fails, is reported, and the schedule goes on.
    mkdirSync(path.join(dir, backupName(clock.nowMs() + 60_000)));
    clock.advance(60_000);
    await until(() => problems.length === 2);
    expect(problems[1]).toMatch(/^backup failed: INVALID_REQUEST: .* it exists/);
    clock.advance(60_000);
    await until(() => done.length === 5);
    schedule.close();
    clock.advance(600_000);
    await new Promise((r) => setTimeout(r, 50));
    expect(done).toHaveLength(5);
    await store.close();
  });

  it("never counts or removes another store's backups in the same folder", async () => {
    const clockA = new ManualClock(Date.UTC(2026, 11, 4, 3, 0, 0));
    const clockB = new ManualClock(Date.UTC(2026, 11, 4, 3, 0, 30));
    const a = await OffsetStore.open({ dir: tempDir(), bucketCount: 2, clock: clockA });
    const b = await OffsetStore.open({ dir: tempDir(), bucketCount: 2, clock: clockB });
    const dir = path.join(tempDir(), 'backups');
    const made: string[] = [];
    const scheduleOf = (store: OffsetStore, clock: ManualClock) =>
      new ScheduledBackups({
        store,
        dir,
        everyMs: 0,
        keep: 2,
        clock,
        fs: new NodeFileSystem(),
        onBackup: (report) => made.push(path.basename(report.dir)),
        onProblem: (message) => {
          throw new Error(message);
        },
      });
    const scheduleA = scheduleOf(a, clockA);
    const scheduleB = scheduleOf(b, clockB);
    await scheduleB.now();
    for (let i = 0; i < 4; i++) {
      clockA.advance(60_000);
      await scheduleA.now();
    }
    const ofB = made[0]!;
    expect(readdirSync(dir).sort()).toEqual([ofB, ...made.slice(-2)].sort());
    clockB.advance(600_000);
    await scheduleB.now();
    expect(readdirSync(dir).sort()).toEqual([ofB, ...made.slice(-3)].sort());
    await a.close();
    await b.close();
  });
});
