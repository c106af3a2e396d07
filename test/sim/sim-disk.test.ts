/**
 * The simulated disk keeps POSIX's promises and no more: fdatasync makes a file's bytes and size
 * durable, a directory fsync its entries; a power loss keeps what is durable and, of the rest, what
 * the seed chooses (whole sectors, reordered; a prefix of each directory's operations, a rename
 * whole); durable bytes are never lost to a power loss; and the same seed makes the same disk.
 */
import { describe, expect, it } from 'vitest';
import { SECTOR_BYTES, SimDisk } from '../../sim/sim-disk.js';
import { SimRandom } from '../../sim/sim-random.js';

function diskWithFile(bytes: Buffer, synced: boolean): SimDisk {
  const disk = new SimDisk();
  disk.mkdirp('/d');
  disk.syncDir('/');
  const file = disk.createFile('/d/f', true);
  disk.syncDir('/d');
  file.write(bytes, 0);
  if (synced) file.sync();
  return disk;
}

describe('SimDisk', () => {
  it('keeps a file fdatasynced before a power loss, whatever the seed', () => {
    const bytes = Buffer.alloc(3 * SECTOR_BYTES + 17, 7);
    for (let seed = 0; seed < 50; seed++) {
      const disk = diskWithFile(bytes, true);
      disk.powerLoss(new SimRandom(seed));
      expect(disk.file('/d/f').data.subarray(0, disk.file('/d/f').sizeBytes).equals(bytes)).toBe(
        true,
      );
    }
  });

  it('keeps of unsynced writes whole sectors only, each either new or old, and never the durable bytes they share a sector with', () => {
    const outcomes = new Set<string>();
    for (let seed = 0; seed < 200; seed++) {
      const disk = diskWithFile(Buffer.alloc(100, 1), true);
      disk.file('/d/f').write(Buffer.alloc(2 * SECTOR_BYTES, 2), 100);
      disk.powerLoss(new SimRandom(seed));
      const file = disk.file('/d/f');
      const data = file.data.subarray(0, file.sizeBytes);
      expect(
        data.subarray(0, 100).equals(Buffer.alloc(100, 1)),
        `seed ${seed}: durable bytes kept`,
      ).toBe(true);
      for (let sector = 0; sector * SECTOR_BYTES < data.length; sector++) {
        const from = Math.max(100, sector * SECTOR_BYTES);
        const part = data.subarray(from, Math.min(data.length, (sector + 1) * SECTOR_BYTES));
        expect(
          part.every((b) => b === part[0]),
          `seed ${seed}: sector ${sector} is whole`,
        ).toBe(true);
      }
      outcomes.add(
        `${file.sizeBytes}:${[...data.subarray(100)].join('').replace(/(.)\1*/g, '$1')}`,
      );
    }
    expect(outcomes.size, 'different seeds keep different sectors').toBeGreaterThan(2);
  });

  it('forgets directory operations made after the last fsync of their directory, in order, and a rename whole', () => {
    let lost = 0;
    for (let seed = 0; seed < 100; seed++) {
      const disk = diskWithFile(Buffer.from('x'), true);
      disk.createFile('/d/g', true).sync();
      disk.rename('/d/f', '/d/h');
      disk.powerLoss(new SimRandom(seed));
      const names = [
        ...(disk.lookup('/d') as { entries: Map<string, unknown> }).entries.keys(),
      ].sort();
      // g's creation comes first, the rename second: never the rename without the creation, never both f and h.
      expect([['f'], ['f', 'g'], ['g', 'h']]).toContainEqual(names);
      if (names.length === 1) lost++;
    }
    expect(lost).toBeGreaterThan(0);
  });

  it('makes nothing of a directory whose own creation was never made durable', () => {
    const disk = new SimDisk();
    disk.mkdirp('/new/store');
    disk.syncDir('/new/store');
    disk.syncDir('/new');
    disk.powerLoss({ chance: () => true, int: (min: number) => min } as unknown as SimRandom);
    expect(disk.lookup('/new')).toBeUndefined();
  });

  it('makes the same disk from the same seed', () => {
    const run = (seed: number) => {
      const disk = diskWithFile(Buffer.alloc(2000, 3), false);
      disk.createFile('/d/g', true).write(Buffer.alloc(900, 4), 0);
      disk.powerLoss(new SimRandom(seed));
      return disk.digest();
    };
    expect(run(42)).toBe(run(42));
    expect(new Set(Array.from({ length: 20 }, (_, i) => run(i))).size).toBeGreaterThan(1);
  });
});
