/**
 * OffsetStore.open when the file system refuses it: every failure is an OffsetStoreError whose code
 * says what to do and whose message names the path, the one that caused it reaches the caller (not
 * a later failure while cleaning up), and a failed open leaves nothing open and the store unlocked.
 */
import { execFileSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkBatch, readBatchLogOffset, sealBatch } from '../../src/codec/index.js';
import { OffsetStore } from '../../src/index.js';
import { NodeFileSystem } from '../../src/io/index.js';
import { OffsetsTable } from '../../src/kv/index.js';
import { Log, ManifestFile } from '../../src/log/index.js';
import { dumpLog, verifyLog } from '../../src/admin/index.js';
import { logOptions } from '../support/log-fixtures.js';
import { FaultyFileSystem } from '../support/faulty-file-system.js';
import { tempDir } from '../support/temp-dir.js';
import { dirFingerprint } from '../support/dir-fingerprint.js';

/** The real file system, with an error injected where `fail` says so (by operation and path). */
class RefusingFileSystem extends NodeFileSystem {
  constructor(
    readonly fail: (operation: string, filePath: string) => NodeJS.ErrnoException | undefined,
  ) {
    super();
  }

  override async mkdir(filePath: string): Promise<void> {
    const error = this.fail('mkdir', filePath);
    if (error !== undefined) throw error;
    return super.mkdir(filePath);
  }

  override async unlink(filePath: string): Promise<void> {
    const error = this.fail('unlink', filePath);
    if (error !== undefined) throw error;
    return super.unlink(filePath);
  }
}

function errnoError(code: string, operation: string, filePath: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: injected, ${operation} '${filePath}'`), {
    code,
    path: filePath,
  });
}

describe('OffsetStore.open failures', () => {
  it('refuses a store.json older than its logs (restored from a copy) with CORRUPT_MESSAGE saying so, not that batches are missing', async () => {
    const dir = tempDir();
    const first = await OffsetStore.open({ dir, bucketCount: 1 });
    await first.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    await first.close();
    const older = readFileSync(path.join(dir, 'store.json'));
    const second = await OffsetStore.open({ dir });
    await second.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 2 }]);
    await second.close();
    writeFileSync(path.join(dir, 'store.json'), older);
    const olderThanLog =
      /ends at log offset 2, past log offset 1, .*store\.json is older than the log/;
    await expect(OffsetStore.open({ dir })).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringMatching(olderThanLog),
    });
    // `log verify` says what the open does.
    expect((await verifyLog(dir)).problems).toEqual([
      expect.objectContaining({ kind: 'corrupt', reason: expect.stringMatching(olderThanLog) }),
    ]);
  });

  it('refuses a whole batch of a format it does not know (attributes set, checksum valid) at the log tail after a crash, instead of cutting it as torn', async () => {
    // Cut as a torn tail, the acknowledged commit in it was lost without a word (as "never acknowledged").
    const dir = tempDir();
    const store = await OffsetStore.open({ dir, bucketCount: 1 });
    for (let b = 1; b <= 3; b++)
      await store.commitOffsets('g', [{ tableId: 1, bucketId: b, offset: 100 * b }]);
    const crashed = tempDir();
    cpSync(dir, crashed, { recursive: true }); // copied while open, as a crash leaves it
    await store.close();
    rmSync(path.join(crashed, 'LOCK'), { force: true });
    const bucketDir = path.join(crashed, 'buckets', '000');
    const file = path.join(
      bucketDir,
      readdirSync(bucketDir).find((f) => f.endsWith('.log'))!,
    );
    const bytes = readFileSync(file);
    let last = -1;
    for (let p = 0; ;) {
      const check = checkBatch(bytes, p, bytes.length, 8 << 20);
      if (check.kind !== 'ok') break;
      last = p;
      p += check.sizeBytes;
    }
    bytes[last + 31] = 0x01; // attributes
    sealBatch(bytes, readBatchLogOffset(bytes.subarray(last)), last, bytes.readInt32LE(last + 40));
    writeFileSync(file, bytes);
    await expect(OffsetStore.open({ dir: crashed, bucketCount: 1 })).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringMatching(/unknown attributes 0x1 \(this version reads 0 only\)/),
    });
    // log dump shows it as damage with or without --records.
    for (const records of [false, true]) {
      const entries: { kind: string; reason?: string }[] = [];
      const summary = await dumpLog(crashed, 0, { records }, (e) => entries.push(e));
      expect(summary.damageCount, `records: ${records}`).toBe(1);
      expect(entries.filter((e) => e.kind === 'damage')[0]?.reason).toMatch(/unknown attributes/);
    }
    // Below a checkpoint (a replay starting past it) the batch is refused all the same.
    await expect(
      Log.open(logOptions(bucketDir), { fromLogOffset: 3, visit: () => {} }),
    ).rejects.toMatchObject({ code: 'CORRUPT_MESSAGE' });
  });

  it('a cluster node given the directory of a store of its own: INVALID_CONFIG saying so, not that the node asked for a strategy', async () => {
    const dir = tempDir();
    const standalone = await OffsetStore.open({ dir, bucketCount: 2 });
    await standalone.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 5 }]);
    await standalone.close();
    await expect(OffsetStore.openHosted({ dir, bucketCount: 2 })).rejects.toThrow(
      `INVALID_CONFIG: ${dir} holds a store of its own (compacted by 'log-cleaner'), not a cluster node's: a node keeps its offsets in etcd, and needs a directory of its own`,
    );
    const reopened = await OffsetStore.open({ dir });
    expect(await reopened.fetchOffsets('g', [{ tableId: 1, bucketId: 0 }])).toEqual([
      expect.objectContaining({ offset: 5 }),
    ]);
    await reopened.close();
  });

  it('a dir that is a regular file, or lies under one: INVALID_CONFIG naming it, and nothing is created', async () => {
    const file = path.join(tempDir(), 'offsets');
    writeFileSync(file, 'not a store');
    await expect(OffsetStore.open({ dir: file })).rejects.toMatchObject({
      name: 'OffsetStoreError',
      code: 'INVALID_CONFIG',
      message: `INVALID_CONFIG: ${file} is not a directory`,
    });
    await expect(OffsetStore.open({ dir: path.join(file, 'sub') })).rejects.toMatchObject({
      name: 'OffsetStoreError',
      code: 'INVALID_CONFIG',
      message: `INVALID_CONFIG: ${path.join(file, 'sub')} is not a directory: it or a folder on its path is a file`,
    });
    expect(readdirSync(path.dirname(file))).toEqual(['offsets']);
  });

  it.runIf(process.platform === 'linux')(
    'a malformed group snapshot: CORRUPT_MESSAGE, and the offsets-bucket it was read from is closed',
    async () => {
      const dir = tempDir();
      await (await OffsetStore.open({ dir, bucketCount: 1 })).close();
      // A valid batch whose group snapshot no writer of this store could have produced.
      const { table } = await OffsetsTable.open({
        log: logOptions(path.join(dir, 'buckets', '000')),
        useCheckpoints: false,
        logStart: 0,
        onWarning: () => {},
      });
      await table.writeSnapshot(
        'g',
        { groupEpoch: -1, assignmentEpoch: 0, tableLayouts: [], members: [] },
        0,
      );
      await table.close();
      // The manifest records where the log ended; the batch written behind the store's back moved it.
      const manifest = await ManifestFile.openOrCreate(new NodeFileSystem(), dir, {
        bucketCount: 1,
        compactionStrategy: 'log-cleaner',
        nowMs: 0,
      });
      await manifest.update((m) => {
        m.buckets[0]!.logEnd = 1;
      });
      const descriptors = (): number => readdirSync('/proc/self/fd').length;
      const before = descriptors();
      await expect(OffsetStore.open({ dir })).rejects.toMatchObject({
        code: 'CORRUPT_MESSAGE',
        message: expect.stringMatching(/group snapshot of 'g'/),
      });
      expect(descriptors()).toBe(before);
    },
  );

  it.runIf(process.platform === 'linux')(
    'a FIFO or a directory where a store file belongs: refused at once, naming the file (a FIFO used to block the open for good)',
    async () => {
      const make = async () => {
        const dir = tempDir();
        const store = await OffsetStore.open({ dir, bucketCount: 2 });
        await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 1 }]);
        await store.close();
        const bucket = path.join(dir, 'buckets', '000');
        const segment = path.join(
          bucket,
          readdirSync(bucket).find((f) => f.endsWith('.log'))!,
        );
        return { dir, segment, manifest: path.join(dir, 'store.json') };
      };
      for (const [what, kind] of [
        ['manifest', 'FIFO'],
        ['segment', 'FIFO'],
        ['manifest', 'directory'],
        ['segment', 'directory'],
      ] as const) {
        const files = await make();
        const target = files[what];
        rmSync(target);
        if (kind === 'FIFO') execFileSync('mkfifo', [target]);
        else mkdirSync(target);
        await expect(OffsetStore.open({ dir: files.dir }), `${what} ${kind}`).rejects.toMatchObject(
          {
            code: 'LOG_STORAGE_ERROR',
            message: expect.stringContaining(`${target} is a ${kind}`),
          },
        );
      }
    },
  );

  it('a failure creating the store reaches the caller, not the failure to remove LOCK after it', async () => {
    const dir = tempDir();
    const warnings: string[] = [];
    const fs = new FaultyFileSystem();
    fs.plan = { failMetaOpAt: 1 }; // the fsync of buckets/ before store.json is written, and every directory operation after it (the LOCK unlink)
    const failure = await OffsetStore.open({ dir, fs, onWarning: (m) => warnings.push(m) }).catch(
      (error: unknown) => error,
    );
    expect(failure).toMatchObject({
      name: 'OffsetStoreError',
      code: 'LOG_STORAGE_ERROR',
      message: `LOG_STORAGE_ERROR: cannot open the store in ${dir}: EIO: injected syncDir failure`,
    });
    expect((failure as Error).cause).toMatchObject({
      code: 'EIO',
      message: 'EIO: injected syncDir failure',
    });
    expect(existsSync(path.join(dir, 'store.json')), 'the manifest is written last').toBe(false);
    expect(warnings).toEqual([
      `${dir}: after the failed open, releasing the lock failed too: EIO: injected unlink failure`,
    ]);
    // The kernel lock and this process's hold were dropped all the same: a new open takes over the LOCK file.
    fs.plan = {};
    const store = await OffsetStore.open({ dir, fs });
    await store.close();
  });

  it('a failure creating an offsets-bucket reaches the caller, not the failure to remove LOCK after it', async () => {
    const dir = tempDir();
    const warnings: string[] = [];
    let refusing = true;
    const fs = new RefusingFileSystem((operation, filePath) => {
      if (!refusing) return undefined;
      if (operation === 'mkdir' && filePath.includes(`${path.sep}buckets${path.sep}`))
        return errnoError('ENOSPC', 'mkdir', filePath);
      if (operation === 'unlink' && path.basename(filePath) === 'LOCK')
        return errnoError('EACCES', 'unlink', filePath);
      return undefined;
    });
    const failure = await OffsetStore.open({
      dir,
      fs,
      bucketCount: 2,
      onWarning: (m) => warnings.push(m),
    }).catch((error: unknown) => error);
    expect(failure).toMatchObject({ name: 'OffsetStoreError', code: 'LOG_STORAGE_ERROR' });
    expect((failure as Error).message).toMatch(
      new RegExp(
        `^LOG_STORAGE_ERROR: cannot open the store in ${dir}: ENOSPC: injected, mkdir '${dir}/buckets/000': the file system \\(or this user's quota\\) is full: free space \\(a store opened to read only, readOnly: true or the command line's --read-only, reads what it holds without writing\\)$`,
      ),
    );
    expect(warnings).toEqual([
      expect.stringMatching(/releasing the lock failed too: EACCES: injected, unlink '.*LOCK'$/),
    ]);
    expect(existsSync(path.join(dir, 'LOCK')), 'the unlink really failed').toBe(true);
    refusing = false;
    // The creation never reached its commit point (store.json): the next open starts it over.
    expect(existsSync(path.join(dir, 'store.json'))).toBe(false);
    const store = await OffsetStore.open({ dir, fs, bucketCount: 2 });
    expect(store.bucketCount).toBe(2);
    await store.close();
  });
  it("refuses to create a store inside another store's folders, writing nothing there (the outer store would no longer open)", async () => {
    const outer = tempDir();
    const store = await OffsetStore.open({ dir: outer, bucketCount: 2 });
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 5 }]);
    await store.close();
    const before = dirFingerprint(outer);
    for (const inner of ['buckets', 'buckets/000', 'journal', 'elsewhere/deeper'])
      await expect(OffsetStore.open({ dir: path.join(outer, inner) })).rejects.toMatchObject({
        code: 'INVALID_CONFIG',
        message: expect.stringContaining(`is inside the store in ${outer}`),
      });
    expect(dirFingerprint(outer)).toEqual(before);
    const reopened = await OffsetStore.open({ dir: outer });
    expect((await reopened.fetchOffsets('g'))[0]?.offset).toBe(5);
    await reopened.close();
  });
});
