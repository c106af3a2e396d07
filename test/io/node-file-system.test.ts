/**
 * NodeFileSystem, the real file-system port: a write of at most syncWriteBytesMax is made on the calling
 * thread (in the file before the promise settles), larger ones through the thread pool, complete and in
 * order; once synchronous writes stall (a moving average of their durations), they pause for a while;
 * a closed handle's datasync and writev reject rather than throw; synchronous writes that have held the
 * event loop for EVENT_LOOP_HOLD_MS_MAX let it turn.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { NodeFileSystem } from '../../src/io/index.js';
import {
  EVENT_LOOP_HOLD_MS_MAX,
  EventLoopWatch,
  FLUSH_SMOOTHING,
  SLOW_SYNC_WRITE_MS,
  SYNC_WRITE_PAUSE_MS,
  SyncWriteGate,
  WRITE_SMOOTHING,
} from '../../src/io/node-file-system.js';
import { tempDir } from '../support/temp-dir.js';

describe('NodeFileSystem', () => {
  it('makes a write of at most syncWriteBytesMax on the calling thread: the bytes are in the file before the promise settles', async () => {
    const file = path.join(tempDir(), 'f');
    const handle = await new NodeFileSystem({ syncWriteBytesMax: 1024 }).open(file, 'w');
    const pending = handle.writev([Buffer.from('abc'), Buffer.from('def')], 0);
    expect(readFileSync(file, 'utf8')).toBe('abcdef');
    await pending;
    await handle.close();
  });

  it('writes larger buffers, and every write when syncWriteBytesMax is 0, through the thread pool, completely and in order', async () => {
    for (const syncWriteBytesMax of [0, 1024]) {
      const file = path.join(tempDir(), 'f');
      const handle = await new NodeFileSystem({ syncWriteBytesMax }).open(file, 'w');
      const parts = [Buffer.alloc(3000, 1), Buffer.alloc(0), Buffer.alloc(5000, 2)];
      await handle.writev(parts, 10);
      await handle.datasync();
      expect(readFileSync(file).equals(Buffer.concat([Buffer.alloc(10), ...parts]))).toBe(true);
      await handle.close();
    }
  });

  it('rejects a syncWriteBytesMax that is not a non-negative integer', () => {
    expect(() => new NodeFileSystem({ syncWriteBytesMax: -1 })).toThrow(RangeError);
    expect(() => new NodeFileSystem({ syncWriteBytesMax: 1.5 })).toThrow(/syncWriteBytesMax/);
  });

  it('makes an fdatasync on the calling thread when syncFlushes allows it, and declines (doing nothing) when it does not', async () => {
    const file = path.join(tempDir(), 'f');
    const onThread = await new NodeFileSystem().open(file, 'w');
    await onThread.writev([Buffer.from('abc')], 0);
    expect(onThread.datasyncNow?.()).toBe(true);
    await onThread.close();
    const pooled = await new NodeFileSystem({ syncFlushes: false }).open(file, 'r+');
    expect(pooled.datasyncNow?.()).toBe(false);
    await pooled.datasync();
    await pooled.close();
    expect(() => new NodeFileSystem({ syncFlushes: 'yes' as unknown as boolean })).toThrow(
      /syncFlushes must be a boolean/,
    );
  });

  it.each([
    ['fdatasyncs', 0, FLUSH_SMOOTHING],
    ['writes', 1024, WRITE_SMOOTHING],
  ])(
    "the file system's gate for synchronous %s pauses on a slow moving average: one stall among fast ones does not pause them, a disk that stalls every time or one long stall does",
    (_kind, bytesMax, smoothing) => {
      let now = 0;
      const run = (ms: number) =>
        gate.time(() => {
          now += ms;
        });
      const gate = new SyncWriteGate(bytesMax, () => now, smoothing);
      for (let i = 0; i < 50; i++) run(0.02);
      run(SLOW_SYNC_WRITE_MS + 0.2);
      expect(gate.allows(bytesMax), 'one stall among fast ones').toBe(true);
      for (let i = 0; i < 50; i++) run(0.02);
      let slow = 0;
      while (gate.allows(bytesMax) && slow < 100) {
        run(2 * SLOW_SYNC_WRITE_MS);
        slow++;
      }
      expect(gate.allows(bytesMax), 'a disk that stalls every time').toBe(false);
      expect(slow).toBeLessThan(10);
      now += SYNC_WRITE_PAUSE_MS;
      expect(gate.allows(bytesMax)).toBe(true);
      run(8 * SLOW_SYNC_WRITE_MS);
      expect(gate.allows(bytesMax), 'one long stall').toBe(false);
    },
  );

  it('rejects (does not throw) a datasync or writev of a closed handle', async () => {
    const handle = await new NodeFileSystem().open(path.join(tempDir(), 'f'), 'w');
    await handle.close();
    await expect(handle.datasync()).rejects.toThrow();
    await expect(handle.writev([Buffer.from('x')], 0)).rejects.toThrow();
  });
  it('pauses synchronous writes for a while after one of them stalled, then allows them again', () => {
    let now = 1000;
    const gate = new SyncWriteGate(1024, () => now);
    expect(gate.allows(1024)).toBe(true);
    expect(gate.allows(1025)).toBe(false);
    expect(
      gate.time(() => {
        now += SLOW_SYNC_WRITE_MS - 1;
        return 'fast';
      }),
    ).toBe('fast');
    expect(gate.allows(10)).toBe(true);
    gate.time(() => {
      now += SLOW_SYNC_WRITE_MS;
    });
    expect(gate.allows(10)).toBe(false);
    now += SYNC_WRITE_PAUSE_MS - 1;
    expect(gate.allows(10)).toBe(false);
    now += 1;
    expect(gate.allows(10)).toBe(true);
    // A write that throws is timed too.
    expect(() =>
      gate.time(() => {
        now += 50;
        throw new Error('EIO');
      }),
    ).toThrow('EIO');
    expect(gate.allows(10)).toBe(false);
  });

  it('tells a synchronous write when the event loop has not turned for EVENT_LOOP_HOLD_MS_MAX since the first of its turn', () => {
    let now = 1000;
    const turns: (() => void)[] = [];
    const watch = new EventLoopWatch(
      () => now,
      (callback) => turns.push(callback),
    );
    expect(watch.held()).toBe(false);
    expect(turns).toHaveLength(1);
    now += EVENT_LOOP_HOLD_MS_MAX - 0.5;
    expect(watch.held()).toBe(false);
    now += 0.5;
    expect(watch.held()).toBe(true);
    expect(turns).toHaveLength(1);
    // The loop turned: the next write starts a new watch, whatever the time since the last one.
    turns.shift()!();
    now += 100;
    expect(watch.held()).toBe(false);
    expect(turns).toHaveLength(1);
  });

  it('lets the event loop turn during back-to-back synchronous writes', async () => {
    const handle = await new NodeFileSystem().open(path.join(tempDir(), 'f'), 'w');
    let turned = false;
    setImmediate(() => {
      turned = true;
    });
    // The loop ends at the first turn: the deadline only bounds a failure.
    const until = performance.now() + 250 * EVENT_LOOP_HOLD_MS_MAX;
    let writes = 0;
    while (!turned && performance.now() < until) await handle.writev([Buffer.from('x')], writes++);
    const turnedWhileWriting = turned;
    await handle.close();
    expect(turnedWhileWriting, `after ${writes} writes`).toBe(true);
  });
});
