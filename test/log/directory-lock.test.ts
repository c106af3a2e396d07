import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { NodeFileSystem } from '../../src/io/index.js';
import { DirectoryLock } from '../../src/log/index.js';
import { exited, forkTs } from '../support/fork-child.js';
import { tempDir } from '../support/temp-dir.js';

const CHILD = path.join(import.meta.dirname, 'lock-holder-child.ts');

function firstMessage(child: ReturnType<typeof forkTs>): Promise<{ type: string; code?: string }> {
  return new Promise((resolve) => child.once('message', resolve as never));
}

describe('DirectoryLock', () => {
  it('refuses a second live process with STORE_LOCKED and lets a new one in after the holder is SIGKILLed', async () => {
    const dir = tempDir();
    const holder = forkTs(CHILD, [dir]);
    expect(await firstMessage(holder)).toEqual({ type: 'locked' });
    const second = forkTs(CHILD, [dir]);
    expect(await firstMessage(second)).toEqual({ type: 'refused', code: 'STORE_LOCKED' });
    await exited(second);
    await expect(DirectoryLock.acquire(new NodeFileSystem(), dir)).rejects.toThrow(/STORE_LOCKED: .* locked by live process/);
    holder.kill('SIGKILL');
    await exited(holder);
    const lock = await DirectoryLock.acquire(new NodeFileSystem(), dir);
    await expect(DirectoryLock.acquire(new NodeFileSystem(), dir)).rejects.toThrow(/STORE_LOCKED: .* already open in this process/);
    await lock.release();
    await (await DirectoryLock.acquire(new NodeFileSystem(), dir)).release();
  });
});
