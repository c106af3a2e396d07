/**
 * The topic catalog: topics are created with a stable UUID and the next table id, survive a reopen,
 * grow and never shrink, and are visible only once durable (written through the file-system port as
 * temp file, fdatasync, rename, directory fsync). Names follow Kafka's rules (1 to 249 characters of
 * [a-zA-Z0-9._-], not '.' or '..', no collision of '.' with '_'). A damaged or hand-edited file is
 * CORRUPT_MESSAGE naming it; a failed write fail-stops the catalog until it is reopened.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  CATALOG_FILE,
  TopicCatalog,
  encodeCatalog,
  topicNameProblem,
  type TopicCatalogOptions,
  type TopicEntry,
} from '../../../src/kafka/catalog/index.js';
import { FaultyFileSystem } from '../../support/faulty-file-system.js';
import { tempDir } from '../../support/temp-dir.js';

const T0 = 1_700_000_000_000;

function openCatalog(
  dir: string,
  fs = new FaultyFileSystem(),
  changed: TopicEntry[] = [],
  topicsMax = 100,
  more: Partial<TopicCatalogOptions> = {},
): Promise<TopicCatalog> {
  return TopicCatalog.open({
    fs,
    dir,
    topicsMax,
    nowMs: () => T0,
    onTopicChanged: (t) => changed.push(t),
    ...more,
  });
}

describe('TopicCatalog', () => {
  it('creates topics with a UUID and table ids 1, 2, ..., findable by name, id and table; they survive a reopen', async () => {
    const dir = tempDir();
    const changed: TopicEntry[] = [];
    const catalog = await openCatalog(dir, undefined, changed);
    expect(catalog.size).toBe(0);
    const orders = await catalog.createTopic('orders', 3);
    const audit = await catalog.createTopic('audit.v1', 1);
    expect(orders).toMatchObject({ name: 'orders', tableId: 1, partitions: 3, createdAtMs: T0 });
    expect(audit).toMatchObject({ name: 'audit.v1', tableId: 2, partitions: 1 });
    expect(orders.topicId).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(orders.topicId).not.toBe(audit.topicId);
    expect(
      await catalog.createTopic('orders', 7),
      'creating an existing topic changes nothing',
    ).toBe(orders);
    expect(changed).toEqual([orders, audit]);
    expect(catalog.byTopicId(orders.topicId)).toBe(orders);
    expect(catalog.byTableId(2)).toBe(audit);
    expect(catalog.topics().map((t) => t.name)).toEqual(['audit.v1', 'orders']);

    const reopened = await openCatalog(dir);
    expect(reopened.topics()).toEqual(catalog.topics());
    expect(reopened.clusterId).toBe(catalog.clusterId);
    expect(reopened.clusterId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(
      (await reopened.createTopic('third', 1)).tableId,
      'table ids continue after the highest',
    ).toBe(3);
  });

  it('writes the file durably through the port: temp file, fdatasync, rename, directory fsync', async () => {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const catalog = await openCatalog(dir, fs);
    const before = { datasync: fs.datasyncCount, meta: fs.metaOpCount };
    await catalog.createTopic('t', 1);
    expect(fs.datasyncCount - before.datasync).toBe(1);
    expect(fs.metaOpCount - before.meta, 'rename and directory fsync').toBe(2);
    const text = readFileSync(path.join(dir, CATALOG_FILE), 'utf8');
    expect(JSON.parse(text)).toMatchObject({
      formatVersion: 1,
      topics: [{ name: 't', tableId: 1, partitions: 1 }],
      checksum: expect.any(Number),
    });
  });

  it('grows a topic with ensureTopic (same id and table) and refuses to shrink it with INVALID_CONFIG', async () => {
    const dir = tempDir();
    const changed: TopicEntry[] = [];
    const catalog = await openCatalog(dir, undefined, changed);
    const small = await catalog.ensureTopic('orders', 2);
    const grown = await catalog.ensureTopic('orders', 5);
    expect(grown).toEqual({ ...small, partitions: 5 });
    expect(await catalog.ensureTopic('orders', 5)).toBe(grown);
    await expect(catalog.ensureTopic('orders', 4)).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      refusal: 'shrink',
    });
    expect(catalog.get('orders')?.partitions).toBe(5);
    expect(changed.map((t) => t.partitions)).toEqual([2, 5]);
    expect((await openCatalog(dir)).get('orders')).toEqual(grown);
  });

  it("validates names as Kafka does and refuses a name colliding with another ('.' like '_')", async () => {
    for (const bad of ['', '.', '..', 'a'.repeat(250), 'spaced name', 'ü', 'a/b', 'a:b'])
      expect(topicNameProblem(bad), JSON.stringify(bad)).not.toBeNull();
    for (const good of ['a', 'a'.repeat(249), 'A-z_0.9', '...', '__consumer'])
      expect(topicNameProblem(good), good).toBeNull();
    const catalog = await openCatalog(tempDir());
    await expect(catalog.createTopic('bad name', 1)).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      refusal: 'invalid-name',
    });
    await catalog.createTopic('metrics.cpu', 1);
    expect(catalog.nameProblem('metrics_cpu')).toMatch(/collides/);
    await expect(catalog.createTopic('metrics_cpu', 1)).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      refusal: 'collision',
    });
    for (const partitions of [0, -1, 1.5, 65_537]) {
      await expect(catalog.createTopic('p', partitions), String(partitions)).rejects.toMatchObject({
        code: 'INVALID_REQUEST',
        refusal: 'partitions',
      });
    }
    expect(catalog.size).toBe(1);
  });

  it('holds at most topicsMax topics', async () => {
    const catalog = await openCatalog(tempDir(), undefined, [], 2);
    await catalog.createTopic('a', 1);
    await catalog.createTopic('b', 1);
    await expect(catalog.createTopic('c', 1)).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      refusal: 'topics-max',
    });
    expect(catalog.size).toBe(2);
  });

  it('runs concurrent changes one at a time: distinct table ids, one topic per name', async () => {
    const catalog = await openCatalog(tempDir());
    const created = await Promise.all(
      ['x', 'y', 'x', 'z', 'y'].map((name) => catalog.createTopic(name, 1)),
    );
    expect(created.map((t) => t.tableId)).toEqual([1, 2, 1, 3, 2]);
    expect(catalog.size).toBe(3);
  });

  it('writes changes asked for together once: 2000 creations are one write; a collision, a bad name or a shrink among them is refused alone', async () => {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const changed: TopicEntry[] = [];
    const catalog = await openCatalog(dir, fs, changed, 5000);
    await catalog.createTopic('t0', 2);
    const before = fs.datasyncCount;
    const names = Array.from({ length: 2000 }, (_, i) => `n${i}`);
    const settled = await Promise.allSettled([
      ...names.map((name) => catalog.createTopic(name, 1)),
      catalog.createTopic('a.b', 1),
      catalog.createTopic('a_b', 1),
      catalog.createTopic('bad/name', 1),
      catalog.ensureTopic('t0', 1),
      catalog.ensureTopic('n5', 4),
      catalog.createTopic('n5', 1),
    ]);
    expect(fs.datasyncCount - before, 'one write for all').toBe(1);
    const values = settled.map((r) => (r.status === 'fulfilled' ? r.value : r.reason));
    expect(values.slice(0, 2000).map((t: TopicEntry) => t.tableId)).toEqual(
      names.map((_, i) => i + 2),
    );
    expect(values[2000]).toMatchObject({ name: 'a.b', tableId: 2002 });
    expect(values[2001]).toMatchObject({ code: 'INVALID_REQUEST', refusal: 'collision' });
    expect(values[2002]).toMatchObject({ code: 'INVALID_REQUEST', refusal: 'invalid-name' });
    expect(values[2003]).toMatchObject({ code: 'INVALID_CONFIG', refusal: 'shrink' });
    expect(values[2004]).toMatchObject({ name: 'n5', tableId: 7, partitions: 4 });
    expect(
      values[2005],
      'a create after a grow of the same round sees the grown topic',
    ).toMatchObject({ name: 'n5', partitions: 4 });
    expect(catalog.size).toBe(2002);
    expect(changed.length, 'each topic changed is told once').toBe(2002);
    const reopened = await openCatalog(dir, fs, [], 5000);
    expect(reopened.size).toBe(2002);
    expect(reopened.get('n5')?.partitions).toBe(4);
    expect((await reopened.createTopic('next', 1)).tableId).toBe(2003);
  });

  it('gives new topics table ids above the highest the store holds offsets of, asking once, with one warning', async () => {
    const warnings: string[] = [];
    let asked = 0;
    const catalog = await openCatalog(tempDir(), undefined, [], 100, {
      highestTableIdInUse: async () => {
        asked++;
        return 7;
      },
      onWarning: (m) => warnings.push(m),
    });
    expect((await catalog.createTopic('a', 1)).tableId).toBe(8);
    expect((await catalog.createTopic('b', 1)).tableId).toBe(9);
    expect(asked).toBe(1);
    expect(warnings).toEqual([expect.stringMatching(/tables up to 7 .*from 8/)]);
  });

  it('fails the changes of a round whose hearer or table-id check throws, and goes on with the next; the check is asked again until it answers', async () => {
    let failCheck = true;
    let failHearer = false;
    const catalog = await openCatalog(tempDir(), undefined, [], 100, {
      highestTableIdInUse: async () => {
        if (failCheck) throw new Error('store closed');
        return 4;
      },
      onTopicChanged: () => {
        if (failHearer) throw new Error('hearer failed');
      },
    });
    await expect(catalog.createTopic('a', 1)).rejects.toThrow('store closed');
    failCheck = false;
    expect((await catalog.createTopic('a', 1)).tableId).toBe(5);
    failHearer = true;
    await expect(catalog.createTopic('b', 1)).rejects.toThrow('hearer failed');
    expect(catalog.get('b')?.tableId, 'durable and installed all the same').toBe(6);
    failHearer = false;
    expect((await catalog.createTopic('c', 1)).tableId).toBe(7);
    await catalog.idle();
  });

  it('asks the store only for a round that creates a topic: growing one goes on while the store cannot tell', async () => {
    const dir = tempDir();
    await (await openCatalog(dir)).createTopic('orders', 1);
    let asked = 0;
    const catalog = await openCatalog(dir, undefined, [], 100, {
      highestTableIdInUse: async () => {
        asked++;
        throw new Error('offsets-bucket 1 failed to open');
      },
    });
    expect((await catalog.ensureTopic('orders', 3)).partitions).toBe(3);
    expect(asked).toBe(0);
    await expect(catalog.createTopic('payments', 1)).rejects.toThrow(/failed to open/);
    expect(asked).toBe(1);
    await catalog.idle();
  });

  it('refuses a damaged or edited file with CORRUPT_MESSAGE naming it, and another format with INVALID_CONFIG', async () => {
    const dir = tempDir();
    await (await openCatalog(dir)).createTopic('orders', 3);
    const file = path.join(dir, CATALOG_FILE);
    const good = readFileSync(file, 'utf8');
    const damaged: [string, string][] = [
      ['edited partition count', good.replace('"partitions":3', '"partitions":4')],
      ['edited table id', good.replace('"tableId":1', '"tableId":2')],
      ['truncated', good.slice(0, good.length / 2)],
      [
        'a flipped checksum digit',
        good.replace(/"checksum": (\d)/, (_, d: string) => `"checksum": ${(Number(d) + 1) % 10}`),
      ],
      ['empty', ''],
      ['not an object', '[]'],
    ];
    for (const [what, text] of damaged) {
      writeFileSync(file, text);
      await expect(openCatalog(dir), what).rejects.toMatchObject({
        code: 'CORRUPT_MESSAGE',
        message: expect.stringContaining(file),
      });
    }
    writeFileSync(file, good.replace('"formatVersion": 1', '"formatVersion": 2'));
    await expect(openCatalog(dir)).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
    writeFileSync(file, good);
    expect((await openCatalog(dir)).get('orders')?.partitions).toBe(3);
    // Not a file at all: the store's error, naming it.
    rmSync(file);
    mkdirSync(file);
    await expect(openCatalog(dir)).rejects.toMatchObject({
      name: 'OffsetStoreError',
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringContaining(`reading the topic catalog ${file} failed`),
    });
  });

  it('refuses, with CORRUPT_MESSAGE, a file whose checksum is right but which repeats a topic id or names a topic of no partitions', async () => {
    const dir = tempDir();
    const file = path.join(dir, CATALOG_FILE);
    const topic = (name: string, tableId: number, topicId: string, partitions = 1) => ({
      name,
      topicId,
      tableId,
      partitions,
      createdAtMs: T0,
    });
    const id = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
    const clusterId = 'AAAAAAAAAAAAAAAAAAAAAA';
    const files: [string, TopicEntry[]][] = [
      ['a repeated topic id', [topic('audit', 1, id(1)), topic('orders', 2, id(1))]],
      ['a topic of no partitions', [topic('orders', 1, id(1), 0)]],
    ];
    for (const [what, topics] of files) {
      writeFileSync(file, encodeCatalog({ clusterId, topics }));
      await expect(openCatalog(dir), what).rejects.toMatchObject({
        code: 'CORRUPT_MESSAGE',
        message: expect.stringContaining(file),
      });
    }
    writeFileSync(
      file,
      encodeCatalog({ clusterId, topics: [topic('audit', 1, id(1)), topic('orders', 2, id(2))] }),
    );
    expect((await openCatalog(dir)).byTopicId(id(2))?.name, 'the same file, made right').toBe(
      'orders',
    );
  });

  it('after a failed write shows nothing of the change and refuses later changes with LOG_STORAGE_ERROR until reopened', async () => {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const changed: TopicEntry[] = [];
    const catalog = await openCatalog(dir, fs, changed);
    await catalog.createTopic('kept', 1);
    fs.plan = { failDatasyncAt: fs.datasyncCount + 1 };
    await expect(catalog.createTopic('lost', 1)).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
      refusal: 'failed',
    });
    expect(catalog.get('lost')).toBeUndefined();
    fs.plan = {};
    await expect(catalog.createTopic('later', 1)).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
    });
    expect(catalog.get('kept')?.tableId, 'lookups go on').toBe(1);
    expect(changed.map((t) => t.name)).toEqual(['kept']);
    const reopened = await openCatalog(dir, fs);
    expect(reopened.topics().map((t) => t.name)).toEqual(['kept']);
    expect((await reopened.createTopic('later', 1)).tableId).toBe(2);
  });
  it("adopts an authority's catalog (a cluster's): its cluster id, its topics' ids and tables, the larger partition count; durable, findable by the new ids, the old id forgotten", async () => {
    const dir = tempDir();
    const changed: TopicEntry[] = [];
    const catalog = await openCatalog(dir, undefined, changed);
    const orders = await catalog.createTopic('orders', 4);
    const local = await catalog.createTopic('local-only', 1);
    changed.length = 0;
    const authority = {
      clusterId: 'AAAAAAAAAAAAAAAAAAAAAA',
      topics: [
        { ...orders, topicId: '00000000-0000-4000-8000-000000000001', partitions: 2 },
        {
          name: 'payments',
          topicId: '00000000-0000-4000-8000-000000000002',
          tableId: 7,
          partitions: 3,
          createdAtMs: 5,
        },
      ],
    };
    expect(await catalog.adopt(authority)).toEqual([]);
    expect(catalog.clusterId).toBe('AAAAAAAAAAAAAAAAAAAAAA');
    expect(catalog.get('orders')).toEqual({
      ...orders,
      topicId: '00000000-0000-4000-8000-000000000001',
      partitions: 4,
    });
    expect(catalog.byTopicId(orders.topicId), 'the old id is forgotten').toBeUndefined();
    expect(catalog.byTopicId('00000000-0000-4000-8000-000000000002')?.name).toBe('payments');
    expect(catalog.byTableId(7)?.name).toBe('payments');
    expect(catalog.get('local-only'), 'topics the authority does not name stay').toEqual(local);
    expect(changed.map((t) => t.name).sort()).toEqual(['orders', 'payments']);
    expect((await catalog.createTopic('next', 1)).tableId, 'new tables above the adopted').toBe(8);
    const reopened = await openCatalog(dir);
    expect(reopened.clusterId).toBe('AAAAAAAAAAAAAAAAAAAAAA');
    expect(reopened.topics()).toEqual(catalog.topics());
    expect(await reopened.adopt(authority), 'adopting again changes nothing').toEqual([]);
  });

  it('once it follows an authority, creates and grows topics there and adopts its answer: its table and topic ids, what others added meanwhile; a refusal there says why, a failure leaves the catalog as it was', async () => {
    const dir = tempDir();
    const catalog = await openCatalog(dir);
    await catalog.createTopic('local', 1);
    // The authority: a catalog of its own, table ids from 10, a topic another node added.
    const other = {
      name: 'other',
      topicId: '00000000-0000-4000-8000-0000000000aa',
      tableId: 10,
      partitions: 1,
      createdAtMs: 0,
    };
    const theirs = new Map<string, TopicEntry>([['other', other]]);
    const asked: unknown[] = [];
    let failing = false;
    catalog.follow(async (changes) => {
      asked.push(changes);
      if (failing) throw new Error('etcd unreachable');
      for (const { name, partitions, grow } of changes) {
        const existing = theirs.get(name);
        if (name === 'refused-there') continue;
        if (existing === undefined)
          theirs.set(name, {
            name,
            partitions,
            tableId: 10 + theirs.size,
            topicId: `00000000-0000-4000-8000-${String(theirs.size).padStart(12, '0')}`,
            createdAtMs: 0,
          });
        else if (grow && partitions > existing.partitions)
          theirs.set(name, { ...existing, partitions });
      }
      return { clusterId: 'CCCCCCCCCCCCCCCCCCCCCC', topics: [...theirs.values()] };
    });
    const made = await catalog.createTopic('made', 2);
    expect(made).toMatchObject({ name: 'made', tableId: 11, partitions: 2 });
    expect(made.topicId).toBe('00000000-0000-4000-8000-000000000001');
    expect(asked).toEqual([[{ name: 'made', partitions: 2, grow: false }]]);
    expect(catalog.get('other')?.tableId, 'what the authority holds besides is adopted').toBe(10);
    expect(catalog.clusterId).toBe('CCCCCCCCCCCCCCCCCCCCCC');
    expect((await catalog.ensureTopic('made', 4)).partitions).toBe(4);
    await expect(catalog.createTopic('refused-there', 1)).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      refusal: 'conflict',
      message: expect.stringMatching(/topic refused-there was not created/),
    });
    // Refused here first (a bad name): the authority is not asked.
    asked.length = 0;
    await expect(catalog.createTopic('bad name', 1)).rejects.toMatchObject({
      refusal: 'invalid-name',
    });
    expect(asked).toEqual([]);
    failing = true;
    await expect(catalog.createTopic('later', 1)).rejects.toThrow(/etcd unreachable/);
    expect(catalog.get('later')).toBeUndefined();
    failing = false;
    expect(
      (await catalog.createTopic('later', 1)).tableId,
      'a failure does not stop the catalog',
    ).toBe(12);
    expect((await openCatalog(dir)).topics()).toEqual(catalog.topics());
  });

  it('refuses, and leaves as they are, the topics of an authority that name another table than the catalog does or a table another topic holds; the rest is adopted', async () => {
    const dir = tempDir();
    const catalog = await openCatalog(dir);
    const orders = await catalog.createTopic('orders', 1);
    const audit = await catalog.createTopic('audit', 1);
    const refused = await catalog.adopt({
      clusterId: 'BBBBBBBBBBBBBBBBBBBBBB',
      topics: [
        { ...orders, tableId: 9 },
        {
          name: 'billing',
          topicId: '00000000-0000-4000-8000-000000000003',
          tableId: audit.tableId,
          partitions: 1,
          createdAtMs: 0,
        },
        {
          name: 'fine',
          topicId: '00000000-0000-4000-8000-000000000004',
          tableId: 12,
          partitions: 2,
          createdAtMs: 0,
        },
        // A topic id a topic of this catalog holds: a file naming it twice would not open again.
        { ...audit, name: 'copied-id', tableId: 13 },
      ],
    });
    expect(refused.map((e) => [e.code, e.refusal, e.message])).toEqual([
      [
        'INVALID_CONFIG',
        'conflict',
        expect.stringMatching(/topic orders is table 1 in .* but table 9 in the catalog adopted/),
      ],
      [
        'INVALID_CONFIG',
        'conflict',
        expect.stringMatching(/topic billing is table 2 in the catalog adopted, held by audit/),
      ],
      [
        'INVALID_CONFIG',
        'conflict',
        expect.stringMatching(/topic copied-id has topic id .* held by audit/),
      ],
    ]);
    expect(catalog.get('orders')).toEqual(orders);
    expect(catalog.get('audit')).toEqual(audit);
    expect(catalog.get('billing')).toBeUndefined();
    expect(catalog.get('fine')?.tableId).toBe(12);
    expect(catalog.clusterId).toBe('BBBBBBBBBBBBBBBBBBBBBB');
    expect((await openCatalog(dir)).topics(), 'the file opens again').toEqual(catalog.topics());
  });
});
