/**
 * The SQLite peer must really run with synchronous=FULL, or the comparison pits offset-store's
 * fdatasync-per-commit against a store that does not sync at commit. better-sqlite3 builds SQLite with
 * SQLITE_DEFAULT_WAL_SYNCHRONOUS=1, so WAL mode alone gives NORMAL.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { beforeEach, describe, expect, it } from 'vitest';
import { SqliteAdapter } from '../../bench/compare/adapters/sqlite-adapter.js';
import { tempDir } from '../support/temp-dir.js';

const SYNCHRONOUS_NORMAL = 1;
const SYNCHRONOUS_FULL = 2;

describe('sqlite adapter durability', () => {
  let dir: string;

  beforeEach(() => {
    dir = tempDir('bench-compare-sqlite-');
  });

  it('WAL mode without the pragma runs at NORMAL in this build (the reason the adapter sets FULL)', () => {
    const db = new Database(join(dir, 'plain.sqlite'));
    try {
      db.pragma('journal_mode = WAL');
      db.exec('CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)');
      db.prepare('INSERT INTO t VALUES (1, ?)').run('x');

      expect(db.pragma('synchronous', { simple: true })).toBe(SYNCHRONOUS_NORMAL);
    } finally {
      db.close();
    }
  });

  it('runs with synchronous=FULL after the first write, after many writes and after reopen', async () => {
    const adapter = new SqliteAdapter();
    await adapter.open(dir);
    try {
      await adapter.commit('g', [{ tableId: 1, bucketId: 0, offset: 1 }]);
      expect(adapter.synchronousLevel()).toBe(SYNCHRONOUS_FULL);

      for (let i = 0; i < 50; i++)
        await adapter.commit(`g${i}`, [{ tableId: 1, bucketId: i, offset: i }]);
      expect(adapter.synchronousLevel()).toBe(SYNCHRONOUS_FULL);

      await adapter.close();
      await adapter.open(dir);
      await adapter.commit('g', [{ tableId: 1, bucketId: 0, offset: 2 }]);
      expect(adapter.synchronousLevel()).toBe(SYNCHRONOUS_FULL);
    } finally {
      await adapter.close();
    }
  });

  it('stores in WAL mode', async () => {
    const adapter = new SqliteAdapter();
    await adapter.open(dir);
    await adapter.commit('g', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    await adapter.close();

    const db = new Database(join(dir, 'offsets.sqlite'), { readonly: true });
    try {
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    } finally {
      db.close();
    }
  });
});
