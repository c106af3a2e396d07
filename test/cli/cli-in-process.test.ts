/**
 * The dispatcher and formatting run in-process (cheap): help for every command, usage errors,
 * option parsing, and the human-output helpers. The commands themselves run as child processes in
 * the other files.
 */
import { execFileSync } from 'node:child_process';
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  writeFileSync,
} from 'node:fs';
import * as path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/cli/commands/index.js';
import {
  formatBytes,
  formatDuration,
  formatPercentChange,
  formatTimestamp,
  renderTable,
} from '../../src/cli/output.js';
import { ALL_OPTIONS } from '../../src/cli/run-cli.js';
import { StoreAdmin } from '../../src/admin/index.js';
import { DEMO_MARKER_TEXT, prepareDemoDir } from '../../src/cli/demo/demo-scenario.js';
import { OffsetStore } from '../../src/index.js';
import { loadChecksum } from '../../src/codec/index.js';
import { JOURNAL_DIR, encodeManifest, type StoreManifest } from '../../src/log/index.js';
import { dumpedBatches, seedStore, seededStores, snapshotFiles } from '../admin/admin-fixtures.js';
import { writeTwoFullJournalFiles } from '../support/journal-fixtures.js';
import { tempDir } from '../support/temp-dir.js';
import { runCliCaptured } from '../support/run-cli.js';

const run = runCliCaptured;

const stores = seededStores();
const { copy } = stores;

describe('offset-store dispatcher', () => {
  it('prints help for every command, with its options and examples', async () => {
    for (const command of COMMANDS) {
      const help = await run([...command.words, '--help']);
      expect(help.code).toBe(0);
      expect(
        help.stdout.startsWith(
          `Usage: offset-store ${[...command.words, ...command.positionals].join(' ')} `,
        ),
      ).toBe(true);
      for (const name of [...Object.keys(command.options), 'dir', 'json', 'help'])
        expect(help.stdout).toContain(`--${name}`);
      expect(help.stdout).toContain('Examples:\n  ');
      expect(await run(['help', ...command.words])).toEqual(help);
    }
  });

  it('prints its version, suggests the option meant, and exits 2 for every kind of bad usage', async () => {
    const version = await run(['--version']);
    expect(version).toEqual({
      code: 0,
      stdout: `${JSON.parse(readFileSync(path.resolve(import.meta.dirname, '../../package.json'), 'utf8')).version}\n`,
      stderr: '',
    });
    const typo = await run([
      'groups',
      'describe',
      'orders',
      '--dir',
      stores.seeded,
      '--log-edn',
      '{}',
    ]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(/^error: unknown option --log-edn\. Did you mean --log-end\?\n/);
    // An option of one value given twice is pointed out, not settled silently by the last one.
    const twice = await run([
      'offsets',
      'reset',
      'orders',
      '--dir',
      stores.seeded,
      '--to-offset',
      '5',
      '--to-offset',
      '7',
      '--table',
      '1',
      '--bucket',
      '0',
      '--execute',
    ]);
    expect(twice.code).toBe(2);
    // A bucket id past an int32 is bad usage in a dry run too, not only once --execute commits it.
    const wide = await run(
      [
        'offsets',
        'reset',
        'orders',
        '--dir',
        stores.seeded,
        '--to-offset',
        '3',
        '--table',
        '1',
      ].concat(['--bucket', '2147483648']),
    );
    expect(wide).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^error: --bucket must be at most 2147483647 \(an int32\)/),
    });
    // A file named by mistake that never ends is refused at its limit, not read until memory runs out.
    const endless = await run([
      'offsets',
      'reset',
      'orders',
      '--dir',
      stores.seeded,
      '--from-file',
      '/dev/zero',
    ]);
    expect(endless.code).toBe(2);
    expect(endless.stderr).toMatch(
      /^error: --from-file: cannot read \/dev\/zero: it holds more than 67108864 bytes\n/,
    );
    expect(twice.stderr).toMatch(
      /^error: --to-offset is given twice \("5" and "7"\): give it once\n/,
    );
    const malformed = await run([
      'groups',
      'describe',
      'orders',
      '--dir',
      stores.seeded,
      '--log-end',
      '{"1:0": 5',
    ]);
    const badKey = await run([
      'groups',
      'describe',
      'orders',
      '--dir',
      stores.seeded,
      '--log-end',
      '{"one:0": 5}',
    ]);
    const negative = await run([
      'groups',
      'describe',
      'orders',
      '--dir',
      stores.seeded,
      '--log-end',
      '{"1:0": -5}',
    ]);
    for (const bad of [malformed, badKey, negative]) expect(bad.code).toBe(2);
    expect(badKey.stderr).toMatch(/^error: --log-end: bucket key "one:0" is not/);
  });

  it('refuses a reset plan made for another group, and reads one an editor saved with a byte order mark', async () => {
    const dir = copy();
    const plan = await run([
      'offsets',
      'reset',
      'billing',
      '--dir',
      dir,
      '--to-offset',
      '0',
      '--json',
    ]);
    const file = path.join(tempDir(), 'plan.json');
    writeFileSync(file, plan.stdout);
    const wrong = await run([
      'offsets',
      'reset',
      'orders',
      '--dir',
      dir,
      '--from-file',
      file,
      '--execute',
    ]);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(
      /^error: --from-file: .*plan\.json is a plan for group "billing", not "orders"/,
    );
    // Saved by an editor that puts a byte order mark first: the same plan.
    writeFileSync(file, `\uFEFF${plan.stdout}`);
    const right = await run([
      'offsets',
      'reset',
      'billing',
      '--dir',
      dir,
      '--from-file',
      file,
      '--execute',
    ]);
    expect(right.code, right.stderr).toBe(0);
  });

  it('flags a negative lag (the log end given is behind the committed offset)', async () => {
    const described = await run([
      'groups',
      'describe',
      'orders',
      '--dir',
      stores.seeded,
      '--log-end',
      '{"1:0": 900, "1:1": 2000}',
    ]);
    expect(described.code).toBe(0);
    expect(described.stdout).toMatch(/\n\s+1\s+-\s+0\s+1000\s+900\s+-100 !/);
    expect(described.stdout + described.stderr).toMatch(
      /negative lag \(marked !\) in 1 bucket\(s\)/,
    );
  });

  it('lists the commands at the top level and per family', async () => {
    const top = await run(['--help']);
    expect(top.code).toBe(0);
    for (const command of COMMANDS)
      expect(top.stdout).toContain(`  ${[...command.words, ...command.positionals].join(' ')} `);
    const family = await run(['log', '--help']);
    expect(family.stdout).toMatch(/Commands:\n {2}log dump .*\n {2}log verify .*\n\n/);
  });

  it('gives every option one type across commands, so the first parsing pass agrees with the second', () => {
    for (const command of COMMANDS) {
      for (const [name, spec] of Object.entries(command.options))
        expect([command.words.join(' '), name, spec.type]).toEqual([
          command.words.join(' '),
          name,
          ALL_OPTIONS[name]!.type,
        ]);
    }
  });

  it('exits 2 on usage errors', async () => {
    expect(await run([])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^error: no command given\n/),
    });
    // A malformed value and one out of range get the same message, naming the range.
    for (const members of ['abc', '1', '65'])
      expect(await run(['demo', '--members', members])).toMatchObject({
        code: 2,
        stderr: `error: --members must be an integer in [2, 64], got "${members}"\nRun 'offset-store demo --help' for usage.\n`,
      });
    expect(await run(['frobnicate', '--dir', stores.seeded])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^error: unknown command "frobnicate"/),
    });
    expect(await run(['groups', 'list'])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^error: --dir <path> is required\n/),
    });
    expect(await run(['groups', 'list', '--dir', stores.seeded, '--bogus'])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^error: unknown option --bogus\.\n/),
    });
    expect(await run(['groups', 'describe', '--dir', stores.seeded])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^error: missing <groupId>/),
    });
    expect(await run(['offsets', 'reset', 'orders', '--dir', stores.seeded])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/exactly one of --to-offset/),
    });
    expect(
      await run([
        'offsets',
        'reset',
        'orders',
        '--dir',
        stores.seeded,
        '--to-offset',
        '1',
        '--dry-run',
        '--execute',
      ]),
    ).toMatchObject({ code: 2 });
    expect(await run(['offsets', 'delete', 'orders', '--dir', stores.seeded])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/either --table .* or --all/),
    });
    expect(
      await run(['groups', 'describe', 'orders', '--dir', stores.seeded, '--log-end', '{"1:0": ']),
    ).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^error: --log-end is not valid JSON/),
    });
    // JSON.parse would keep the last of a repeated key: 7, not the 5 also written.
    expect(
      await run([
        'offsets',
        'reset',
        'orders',
        '--dir',
        stores.seeded,
        '--from-file',
        '{"2:7:0": 5, "2:7:\\u0030": 7}',
        '--dry-run',
      ]),
    ).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(
        /^error: --from-file names the key "2:7:0" twice in one object/,
      ),
    });
    expect(await run(['log', 'dump', '--dir', stores.seeded])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/--bucket <n> is required/),
    });
    expect(await run(['compact', '--dir', stores.seeded, '--strategy', 'vacuum'])).toMatchObject({
      code: 2,
    });
  });

  it('exits 2 for --auto-create without --etcd (a single server creates topics unless --no-auto-create) and for both flags at once', async () => {
    const dir = tempDir('offset-store-cli-');
    expect(await run(['serve', '--dir', dir, '--auto-create'])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^error: --auto-create needs --etcd/),
    });
    const both = ['--auto-create', '--no-auto-create'];
    for (const args of [
      ['serve', '--dir', dir, ...both],
      ['serve', '--dir', dir, '--etcd', 'http://127.0.0.1:1', '--node-id', 'n1', ...both],
    ])
      expect(await run(args), args.join(' ')).toMatchObject({
        code: 2,
        stderr: expect.stringMatching(/^error: --auto-create and --no-auto-create contradict/),
      });
  });

  it('exits 2 for a cluster lease TTL out of its range, before it contacts etcd', async () => {
    // Past 3600 s; one past 6,442,450 s overflowed the keepalive timer, which then fired every 1 ms.
    for (const ttl of ['1', '3601', '7000000']) {
      const serve = await run([
        'serve',
        '--dir',
        tempDir('offset-store-cli-'),
        '--etcd',
        'http://127.0.0.1:1',
        '--node-id',
        'n1',
        '--lease-ttl',
        ttl,
      ]);
      expect(serve, ttl).toMatchObject({
        code: 2,
        stderr: expect.stringMatching(
          /^error: --lease-ttl must be an integer in \[2, 3600\], got "/,
        ),
      });
    }
  });

  it('exits 2 for a cluster bucket count below 1 or a broker id beyond an int32, given or taken from the node id, before it contacts etcd', async () => {
    const serve = (...args: string[]) =>
      run([
        'serve',
        '--dir',
        tempDir('offset-store-cli-'),
        '--etcd',
        'http://127.0.0.1:1',
        ...args,
      ]);
    for (const [args, message] of [
      [
        ['--node-id', 'n1', '--bucket-count', '0'],
        /^error: --bucket-count must be an integer >= 1, got "0"/,
      ],
      [
        ['--node-id', 'n1', '--broker-id', '2147483648'],
        /^error: --broker-id must be an integer in \[0, 2147483647\], got "2147483648"/,
      ],
      [
        ['--node-id', 'n2147483648'],
        /^error: --broker-id <n> \(0 to 2147483647\) is required when --node-id/,
      ],
      [
        ['--node-id', 'node'],
        /^error: --broker-id <n> \(0 to 2147483647\) is required when --node-id/,
      ],
    ] as const)
      expect(await serve(...args), args.join(' ')).toMatchObject({
        code: 2,
        stderr: expect.stringMatching(message),
      });
  });

  it('exits 2 for a cluster key prefix without its trailing slash, or an etcd port out of range, before it contacts etcd', async () => {
    const prefix = await run([
      'cluster',
      'status',
      '--etcd',
      'http://127.0.0.1:1',
      '--etcd-prefix',
      'foo',
    ]);
    expect(prefix).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^error: --etcd-prefix: cluster key prefix must end with '\/'/),
    });
    for (const etcd of ['http://127.0.0.1:99999', 'http://127.0.0.1:0']) {
      for (const args of [
        ['cluster', 'status', '--etcd', etcd],
        ['serve', '--dir', tempDir('offset-store-cli-'), '--etcd', etcd, '--node-id', 'n1'],
      ])
        expect(await run(args), args.join(' ')).toMatchObject({
          code: 2,
          stderr: expect.stringMatching(/^error: --etcd must be http\(s\):\/\/host:port URLs/),
        });
    }
  });

  it('takes negative numbers as option values without `=`, and options before the command words', async () => {
    const dir = tempDir('offset-store-cli-');
    cpSync(stores.seeded, dir, { recursive: true });
    const plan = await run([
      '--dir',
      dir,
      '--json',
      'offsets',
      'reset',
      'orders',
      '--shift-by',
      '-5',
      '--table',
      '2',
    ]);
    expect(plan.code).toBe(0);
    expect(JSON.parse(plan.stdout).rows).toEqual([
      { tableId: 2, partitionId: 7, bucketId: 0, currentOffset: 42, newOffset: 37, clamped: false },
    ]);
  });

  it('reports Ctrl-C at the password prompt as an interruption (exit 130), not as bad usage, and stores nothing', async () => {
    const dir = copy();
    const terminal = Object.assign(new PassThrough(), { isTTY: true, setRawMode: () => terminal });
    const stdin = Object.getOwnPropertyDescriptor(process, 'stdin')!;
    Object.defineProperty(process, 'stdin', { value: terminal, configurable: true });
    try {
      const running = run(['users', 'add', 'alice', '--dir', dir]);
      setTimeout(() => terminal.write('sec\u0003'), 20);
      const { code, stderr } = await running;
      expect(code).toBe(130);
      // The prompt goes to the command's own stderr (not the process's, when run in process).
      expect(stderr).toBe('Password for alice: \nerror: interrupted at the password prompt\n');
    } finally {
      Object.defineProperty(process, 'stdin', stdin);
    }
    expect((await run(['users', 'list', '--dir', dir, '--json'])).stdout).not.toContain('alice');
  });

  it('users add and acls add refuse a store of a later format, as every other command does, and write nothing', async () => {
    const dir = copy();
    const file = path.join(dir, 'store.json');
    const manifest = JSON.parse(readFileSync(file, 'utf8')) as StoreManifest;
    writeFileSync(file, encodeManifest({ ...manifest, formatVersion: manifest.formatVersion + 1 }));
    const before = readdirSync(dir).sort();
    for (const args of [
      ['users', 'add', 'bob', '--dir', dir, '--password-stdin'],
      [
        'acls',
        'add',
        '--dir',
        dir,
        '--allow-principal',
        'User:x',
        '--operation',
        'Read',
        '--group',
        'g',
      ],
    ]) {
      // The password, there to read before the command starts (a pipe that has ended).
      const input = new PassThrough();
      input.end('secret\n');
      const stdin = Object.getOwnPropertyDescriptor(process, 'stdin')!;
      Object.defineProperty(process, 'stdin', { value: input, configurable: true });
      try {
        const { code, stderr } = await run(args);
        expect(code, stderr).toBe(1);
        expect(stderr).toMatch(/^error: INVALID_CONFIG: .*format version/);
      } finally {
        Object.defineProperty(process, 'stdin', stdin);
      }
    }
    expect(readdirSync(dir).sort()).toEqual(before);
  });

  it('reports a bad offsets document as bad usage, naming the entry', async () => {
    const bad = await run([
      'groups',
      'describe',
      'orders',
      '--dir',
      stores.seeded,
      '--log-end',
      '{"1:0": -1}',
    ]);
    expect(bad).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(
        /^error: --log-end: --log-end\["1:0"\] must be a safe integer >= 0/,
      ),
    });
  });
});

describe('command output (in-process)', () => {
  it('groups describe: members, assignment, owners, and lag read from a --log-end file', async () => {
    const logEndFile = path.join(tempDir(), 'log-end.json');
    writeFileSync(
      logEndFile,
      JSON.stringify([
        { tableId: 1, bucketId: 0, offset: 1100 },
        { tableId: 2, partitionId: 7, bucketId: 0, offset: 50 },
      ]),
    );
    const orders = await run([
      'groups',
      'describe',
      'orders',
      '--dir',
      stores.seeded,
      '--log-end',
      logEndFile,
    ]);
    expect(orders.code).toBe(0);
    expect(orders.stdout).toContain('  total lag       108\n');
    expect(orders.stdout).toMatch(
      /TABLE\s+PARTITION\s+BUCKET\s+COMMITTED\s+LOG-END\s+LAG\s+LEADER-EPOCH\s+COMMITTED-AT\s+MEMBER-ID\s+METADATA\n/,
    );
    expect(orders.stdout).toMatch(
      /\n\s+1\s+-\s+0\s+1000\s+1100\s+100\s+-\s+2023-11-14 22:13:20Z\s+-\s+host-a\n/,
    );
    expect(orders.stdout).toMatch(/\n\s+2\s+7\s+0\s+42\s+50\s+8\s/);
    const busy = await run(['groups', 'describe', 'busy', '--dir', stores.withMember]);
    expect(busy.stdout).toMatch(/state {11}Stable\n/);
    expect(busy.stdout).toMatch(
      /MEMBER-ID\s+INSTANCE-ID\s+EPOCH\s+STATE\s+SESSION\s+TABLES\s+ASSIGNMENT\s+PENDING-REVOCATION\n\S+\s+-\s+\d+\s+\S+\s+1 min 00 s\s+1\s+1:0 1:1 1:2 1:3\s+-\n/,
    );
  });

  it('offsets reset: the --json plan of a dry run, edited, is a valid --from-file plan; members block --execute', async () => {
    const dir = copy();
    const before = snapshotFiles(dir);
    const dry = await run([
      'offsets',
      'reset',
      'orders',
      '--dir',
      dir,
      '--to-offset',
      '7',
      '--table',
      '1',
      '--json',
    ]);
    expect(snapshotFiles(dir)).toEqual(before);
    const plan = JSON.parse(dry.stdout);
    expect(plan).toMatchObject({
      groupId: 'orders',
      executed: false,
      target: 'to offset 7',
      selection: 'table 1',
      memberCount: 0,
    });
    plan.rows[3].newOffset = 9;
    const planFile = path.join(tempDir(), 'plan.json');
    writeFileSync(planFile, JSON.stringify(plan));
    const executed = await run([
      'offsets',
      'reset',
      'orders',
      '--dir',
      dir,
      '--from-file',
      planFile,
      '--execute',
    ]);
    expect(executed.code).toBe(0);
    expect(executed.stdout).toMatch(
      new RegExp(
        `^Reset group orders from ${planFile} \\(every bucket\\): 4 buckets committed\\.\n`,
      ),
    );
    expect(executed.stdout).toMatch(/PREVIOUS\s+NEW\s+CHANGE\n\s+1\s+-\s+0\s+1000\s+7\s+-993\n/);
    // The same plan again: its rows were planned against offsets the group no longer has
    // (the plan was applied, or the group moved since), so it is refused, writing nothing.
    const applied = snapshotFiles(dir);
    const again = await run([
      'offsets',
      'reset',
      'orders',
      '--dir',
      dir,
      '--from-file',
      planFile,
      '--execute',
    ]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(
      /^error: INVALID_REQUEST: table 1 bucket 0 is committed at 7 now, but .*plan\.json was planned against 1000: the group moved since the plan was made/,
    );
    expect(snapshotFiles(dir)).toEqual(applied);
    // Without currentOffset, an entry is applied as it is.
    for (const r of plan.rows) delete r.currentOffset;
    writeFileSync(planFile, JSON.stringify(plan));
    expect(
      (
        await run([
          'offsets',
          'reset',
          'orders',
          '--dir',
          dir,
          '--from-file',
          planFile,
          '--execute',
        ])
      ).code,
    ).toBe(0);
    const blocked = await run([
      'offsets',
      'reset',
      'busy',
      '--dir',
      stores.withMember,
      '--to-offset',
      '0',
    ]);
    expect(blocked.stderr).toBe(
      'warning: group busy has 1 member(s): --execute is refused with NON_EMPTY_GROUP until they leave\n',
    );
    expect(
      await run([
        'offsets',
        'reset',
        'busy',
        '--dir',
        stores.withMember,
        '--to-offset',
        '0',
        '--execute',
      ]),
    ).toMatchObject({ code: 1, stderr: expect.stringMatching(/^error: NON_EMPTY_GROUP: /) });
  });

  it("log verify says what the next open does with a compaction's leftovers: files of a swap that never committed are removed", async () => {
    const dir = copy();
    writeFileSync(path.join(dir, 'buckets', '000', `00000000000000000000.log.cleaned`), '');
    const verify = await run(['log', 'verify', '--dir', dir]);
    expect(verify.stdout).toContain(
      'ok (leftovers of a compaction that never committed; the next open removes them)',
    );
    expect(verify.stdout).not.toContain('completed on next open');
  });

  it('log verify: a journal file ending before the rounds the next one records for it is corrupt, for the whole store', async () => {
    await loadChecksum();
    const dir = copy();
    // The second file's first round records the first's three rounds.
    const { first } = await writeTwoFullJournalFiles(dir);
    const file = path.join(dir, JOURNAL_DIR, first);
    // Its third round (at 8192) lost: the file ends after round 2.
    writeFileSync(file, readFileSync(file).subarray(0, 8192));
    const verify = await run(['log', 'verify', '--dir', dir]);
    expect(verify.code).toBe(1);
    expect(verify.stdout).toContain(`${first} at byte 8192: round 3 is missing`);
    expect(verify.stdout).toContain('first round records 3 durable rounds in it');
    expect(verify.stdout).toContain(
      'opening the store will fail for the whole store (CORRUPT_MESSAGE, or the error a reason names).',
    );
    await expect(OffsetStore.open({ dir })).rejects.toMatchObject({ code: 'CORRUPT_MESSAGE' });
  });

  it('log verify exits 1 (corrupt), not 3 (a torn tail the next open cuts), when it finds both: the next open refuses the corrupt bucket', async () => {
    const clean = copy();
    const dir = copy();
    const batchesOf = await Promise.all([0, 1, 2, 3].map((b) => dumpedBatches(clean, b)));
    const corruptBucket = batchesOf.findIndex((b) => b.length >= 2);
    const tornBucket = batchesOf.findIndex((b, i) => i !== corruptBucket && b.length >= 1);
    expect(corruptBucket).toBeGreaterThanOrEqual(0);
    expect(tornBucket).toBeGreaterThanOrEqual(0);
    // A flipped bit in a batch followed by others: corruption.
    const victim = batchesOf[corruptBucket]![0]!;
    const file = path.join(dir, path.relative(clean, victim.file));
    const bytes = readFileSync(file);
    bytes[victim.position + 20]! ^= 1;
    writeFileSync(file, bytes);
    // Another bucket's last segment ends in part of a batch: a torn tail.
    const last = batchesOf[tornBucket]!.at(-1)!;
    const tornFile = path.join(dir, path.relative(clean, last.file));
    appendFileSync(tornFile, readFileSync(tornFile).subarray(last.position, last.position + 10));
    const verify = await run(['log', 'verify', '--dir', dir, '--json']);
    expect(JSON.parse(verify.stdout)).toMatchObject({ corruptCount: 1, tornTailCount: 1 });
    expect(verify.code).toBe(1);
  });

  it('log verify answers as the next open does for what is not a file where an open writes one: a directory at store.json.tmp or LOCK fails both, a FIFO at LOCK neither', async () => {
    for (const [name, make, opens] of [
      ['store.json.tmp', (file: string) => mkdirSync(file), false],
      ['LOCK', (file: string) => mkdirSync(file), false],
      ['LOCK', (file: string) => execFileSync('mkfifo', [file]), true],
    ] as const) {
      const dir = copy();
      make(path.join(dir, name));
      const verify = await run(['log', 'verify', '--dir', dir]);
      const context = `${name}, ${opens ? 'a FIFO' : 'a directory'}`;
      expect(verify.code, context).toBe(opens ? 0 : 1);
      if (!opens)
        expect(verify.stdout, context).toContain(
          `${name} is a directory, where an open writes a file: the next open fails (LOG_STORAGE_ERROR) until it is removed`,
        );
      const opening = OffsetStore.open({ dir });
      if (opens) await (await opening).close();
      else await expect(opening, context).rejects.toMatchObject({ code: 'LOG_STORAGE_ERROR' });
    }
  });

  it('log dump: the human lines follow the JSON entries one for one', async () => {
    const args = ['log', 'dump', '--dir', stores.seeded, '--bucket', '0', '--records'];
    const [human, machine] = [await run(args), await run([...args, '--json'])];
    const entries = machine.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    const lines = human.stdout.trim().split('\n');
    expect(lines).toHaveLength(entries.length);
    entries.forEach((entry, i) => {
      const line = lines[i]!;
      if (entry.kind === 'segment')
        expect(line).toBe(
          `segment ${path.relative(stores.seeded, entry.file)} baseOffset=${entry.baseOffset} size=${formatBytes(entry.sizeBytes)}`,
        );
      if (entry.kind === 'batch')
        expect(line).toMatch(
          new RegExp(
            `^batch logOffset=${entry.logOffset} position=${entry.position} size=${entry.sizeBytes} records=${entry.recordCount} checksum=${entry.checksum} time=2023-11-14 22:13:20Z coordinatorEpoch=0$`,
          ),
        );
      if (entry.kind === 'record')
        expect(line).toMatch(
          new RegExp(
            `^  record ${entry.index} group="${entry.groupId}" table=${entry.tableId} bucket=${entry.bucketId} offset=${entry.offset} `,
          ),
        );
      if (entry.kind === 'summary')
        expect(line).toMatch(
          /^\d+ batches, \d+ records, 0 damaged place\(s\) in \d+ segment\(s\) of buckets\/000$/,
        );
    });
  });

  it('compact --strategy checkpoint, then stats shows the checkpoint per offsets-bucket', async () => {
    const dir = copy();
    const compacted = await run(['compact', '--dir', dir, '--strategy', 'checkpoint']);
    expect(compacted.code).toBe(0);
    expect(compacted.stdout).toMatch(
      /^Converted the store from log-cleaner to checkpoint\.\nCompacted 4 offsets-buckets with checkpoint in .*: .* -> .* \(.*%\), \d+ records dropped, .* written\.\n/,
    );
    const stats = await run(['stats', '--dir', dir]);
    const lines = stats.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^Store .*: 4 offsets-buckets, created 2023-11-14 22:13:20Z$/);
    expect(lines[2]).toMatch(
      /^BUCKET\s+STATE\s+LOG\s+SEGMENTS\s+NEXT-LOG-OFFSET\s+LIVE-OFFSETS\s+GROUPS\s+LAST-CHECKPOINT$/,
    );
    expect(
      lines
        .slice(3, 7)
        .every((l, i) =>
          new RegExp(
            `^\\s+${i}\\s+ready\\s+[\\d.]+ (B|KiB)\\s+\\d+\\s+\\d+\\s+\\d+\\s+\\d\\s+log offset \\d+ at \\d{4}-`,
          ).test(l),
        ),
    ).toBe(true);
    expect(lines[7]).toMatch(/^ total\s+[\d.]+ (B|KiB)\s+\d+\s+7\s+2$/);
    // The strategy is the store's now: a plain open uses it, and the store converts back on request.
    expect(JSON.parse(readFileSync(path.join(dir, 'store.json'), 'utf8')).compactionStrategy).toBe(
      'checkpoint',
    );
    const store = await OffsetStore.open({ dir });
    expect((await store.stats()).compactionStrategy).toBe('checkpoint');
    const image = await store.listGroups();
    await store.close();
    const back = await run(['compact', '--dir', dir, '--strategy', 'log-cleaner']);
    expect(back.code).toBe(0);
    expect(back.stdout).toMatch(
      /^Converted the store from checkpoint to log-cleaner\.\nCompacted 4 offsets-buckets with log-cleaner/,
    );
    const reopened = await OffsetStore.open({ dir });
    expect(await reopened.listGroups()).toEqual(image);
    expect((await reopened.stats()).compactionStrategy).toBe('log-cleaner');
    await reopened.close();
  });

  it('demo refuses a non-empty directory that holds no store, and leaves it alone', async () => {
    const notAStore = tempDir('offset-store-demo-');
    writeFileSync(path.join(notAStore, 'notes.txt'), 'keep me');
    const refused = await run(['demo', '--dir', notAStore]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /^error: INVALID_CONFIG: .* is not empty and holds no offset store/,
    );
    expect(readdirSync(notAStore)).toEqual(['notes.txt']);
  });

  it('demo refuses a store it did not create (a user store with groups), exit 1, and leaves every file as it was', async () => {
    const userStore = copy();
    const before = snapshotFiles(userStore);
    const refused = await run(['demo', '--dir', userStore]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /^error: INVALID_CONFIG: .* holds an offset store the demo did not create .*pick another --dir/,
    );
    expect(refused.stdout).not.toContain('joined');
    expect(snapshotFiles(userStore)).toEqual(before);
    expect(
      (
        await StoreAdmin.open(userStore).then(async (admin) => {
          try {
            return await admin.listGroups();
          } finally {
            await admin.close();
          }
        })
      ).map((g) => g.groupId),
    ).toEqual(['billing', 'orders']);
  });
});

describe('a store with one damaged offsets-bucket', () => {
  it('stats shows the bucket failed and exits 1; groups describe reads the groups of the other buckets', async () => {
    const dir = tempDir('offset-store-cli-');
    const store = await OffsetStore.open({
      dir,
      segmentBytesMax: 1024,
      compaction: { background: false },
    });
    for (let i = 0; i < 200; i++)
      await store.commitOffsets(`g${i % 40}`, [{ tableId: 1, bucketId: i % 5, offset: i }]);
    const groups = Array.from({ length: 40 }, (_, i) => `g${i}`);
    const inBucket0 = groups.find((g) => store.bucketFor(g) === 0)!;
    const elsewhere = groups.find((g) => store.bucketFor(g) !== 0)!;
    await store.close();
    const bucketDir = path.join(dir, 'buckets', '000');
    const sealed = path.join(
      bucketDir,
      readdirSync(bucketDir)
        .filter((f) => f.endsWith('.log'))
        .sort()[0]!,
    );
    const bytes = readFileSync(sealed);
    bytes[60]! ^= 0x40;
    writeFileSync(sealed, bytes);
    const stats = await run(['stats', '--dir', dir]);
    expect(stats.code).toBe(1);
    expect(stats.stdout).toMatch(/^\s+0\s+failed\s/m);
    expect(stats.stdout).toMatch(/^\s+1\s+ready\s/m);
    expect(stats.stderr).toMatch(
      /^warning: CORRUPT_MESSAGE: .*00000000000000000000\.log.*; the other offsets-buckets are read as usual/,
    );
    const healthy = await run(['groups', 'describe', elsewhere, '--dir', dir]);
    expect(healthy.code, healthy.stderr).toBe(0);
    expect(healthy.stdout).toContain(`Group ${elsewhere}`);
    const damaged = await run(['groups', 'describe', inBucket0, '--dir', dir]);
    expect(damaged.code).toBe(1);
    expect(damaged.stderr).toMatch(/^error: CORRUPT_MESSAGE: /m);
    // The list refuses still: a listing without the damaged bucket's groups would hide them.
    expect((await run(['groups', 'list', '--dir', dir])).code).toBe(1);
  });
});

describe('names clients chose, printed for a terminal', () => {
  it('escapes control characters in group ids and metadata: no screen clear, no retitle, no forged row', async () => {
    const dir = tempDir('offset-store-cli-');
    const evil = 'evil\x1b[2J\x1b[31m\nreal-group  Stable  consumer  0\rX\u202e';
    const store = await OffsetStore.open({ dir, compaction: { background: false } });
    await store.commitOffsets(evil, [
      { tableId: 1, bucketId: 0, offset: 5, metadata: 'meta\x1b]0;pwned\x07\n' },
    ]);
    await store.close();
    const outputs = [
      await run(['groups', 'list', '--dir', dir]),
      await run(['groups', 'describe', evil, '--dir', dir]),
      await run(['offsets', 'reset', evil, '--dir', dir, '--to-offset', '1']),
      await run(['offsets', 'delete', evil, '--dir', dir, '--all']),
    ];
    for (const { code, stdout, stderr } of outputs) {
      expect(code, stderr).toBe(0);
      expect(stdout + stderr).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f\u202e]/);
      expect(stdout).not.toMatch(/^real-group/m);
      expect(stdout).toContain(
        'evil\\x1b[2J\\x1b[31m\\nreal-group  Stable  consumer  0\\rX\\u202e',
      );
    }
    expect(outputs[1]!.stdout).toContain('meta\\x1b]0;pwned\\x07\\n');
  });

  it('escapes them in error lines too: a group no one committed to, an unknown member', async () => {
    const dir = tempDir('offset-store-cli-');
    const store = await OffsetStore.open({ dir, compaction: { background: false } });
    await store.commitOffsets('real', [{ tableId: 1, bucketId: 0, offset: 5 }]);
    await store.close();
    const evil = JSON.stringify('a\u0000b\x1b[2J\x1b[31mRED\u202e');
    const failures = [
      await run(['groups', 'describe', '--group-id-json', evil, '--dir', dir]),
      await run(['offsets', 'delete', '--group-id-json', evil, '--all', '--dir', dir]),
      await run(['groups', 'remove-members', 'real', '--member', 'm\x1b[2J', '--dir', dir]),
    ];
    for (const { code, stdout, stderr } of failures) {
      expect(code, stderr).toBe(1);
      expect(stdout + stderr).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f\u202e]/);
      expect(stderr).toMatch(/^error: /);
    }
    expect(failures[0]!.stderr).toContain('a\\x00b\\x1b[2J\\x1b[31mRED\\u202e');
  });
});

describe('a group id no command line can carry', () => {
  it('is named with --group-id-json, the id as the JSON string that --json output prints', async () => {
    const dir = tempDir('offset-store-cli-');
    const nul = 'team\u0000a';
    const store = await OffsetStore.open({ dir, compaction: { background: false } });
    await store.commitOffsets(nul, [{ tableId: 1, bucketId: 0, offset: 5 }]);
    await store.commitOffsets('team', [{ tableId: 1, bucketId: 0, offset: 7 }]);
    await store.close();
    const listed = await run(['groups', 'list', '--dir', dir, '--json']);
    const named = JSON.stringify(
      (JSON.parse(listed.stdout) as { groups: { groupId: string }[] }).groups.find(
        (g) => g.groupId !== 'team',
      )!.groupId,
    );
    expect(named).toBe('"team\\u0000a"');
    const described = await run(['groups', 'describe', '--group-id-json', named, '--dir', dir]);
    expect(described.code, described.stderr).toBe(0);
    expect(described.stdout).toContain('team\\x00a');
    const reset = await run([
      'offsets',
      'reset',
      '--group-id-json',
      named,
      '--to-offset',
      '1',
      '--execute',
      '--dir',
      dir,
      '--json',
    ]);
    expect(reset.code, reset.stderr).toBe(0);
    const reopened = await OffsetStore.open({ dir, compaction: { background: false } });
    expect((await reopened.fetchOffsets(nul)).map((o) => o?.offset)).toEqual([1]);
    expect((await reopened.fetchOffsets('team')).map((o) => o?.offset)).toEqual([7]);
    await reopened.close();
    for (const [args, message] of [
      [['--group-id-json', '"team"', 'team'], /give <groupId> or --group-id-json, not both/],
      [['--group-id-json', 'team'], /--group-id-json: not a JSON string/],
      [['--group-id-json', '42'], /--group-id-json: not a JSON string/],
      [[], /missing <groupId> \(or --group-id-json\)/],
    ] as const) {
      const refused = await run(['groups', 'describe', ...args, '--dir', dir]);
      expect(refused.code, refused.stderr).toBe(2);
      expect(refused.stderr).toMatch(message);
    }
  });
});

describe('demo directory', () => {
  it('removes nothing but a demo store: not a folder holding an entry named DEMO, a DEMO of other text, or a demo store with a file put beside it', async () => {
    const projects = tempDir('offset-store-demo-');
    mkdirSync(path.join(projects, 'DEMO'));
    mkdirSync(path.join(projects, 'important'));
    writeFileSync(path.join(projects, 'important', 'thesis.txt'), 'years of work');
    writeFileSync(path.join(projects, 'notes.txt'), 'keep me');
    const refused = await run(['demo', '--dir', projects]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^error: INVALID_CONFIG: .* not the demo's marker file/);
    expect(readdirSync(projects).sort()).toEqual(['DEMO', 'important', 'notes.txt']);
    expect(readFileSync(path.join(projects, 'important', 'thesis.txt'), 'utf8')).toBe(
      'years of work',
    );

    const otherText = tempDir('offset-store-demo-');
    await seedStore(otherText);
    writeFileSync(path.join(otherText, 'DEMO'), 'my notes on the demo\n');
    await expect(prepareDemoDir(otherText)).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
    expect(existsSync(path.join(otherText, 'store.json'))).toBe(true);

    const besides = tempDir('offset-store-demo-');
    await seedStore(besides);
    writeFileSync(path.join(besides, 'DEMO'), DEMO_MARKER_TEXT);
    writeFileSync(path.join(besides, 'report.csv'), 'a,b\n');
    await expect(prepareDemoDir(besides)).rejects.toThrow(/holds "report.csv" beside a demo store/);
    expect(readFileSync(path.join(besides, 'report.csv'), 'utf8')).toBe('a,b\n');
  });

  it('replaces an old demo store whose LOCK file names a live process that holds no lock, and refuses one that is open', async () => {
    const dir = tempDir('offset-store-demo-');
    await seedStore(dir);
    writeFileSync(path.join(dir, 'DEMO'), DEMO_MARKER_TEXT);
    writeFileSync(path.join(dir, 'LOCK'), `${process.ppid}\n`); // a crashed demo's pid, since given to a live process
    await prepareDemoDir(dir);
    expect(existsSync(dir)).toBe(false);

    await seedStore(dir);
    writeFileSync(path.join(dir, 'DEMO'), DEMO_MARKER_TEXT);
    const store = await OffsetStore.open({ dir, compaction: { background: false } });
    try {
      await expect(prepareDemoDir(dir)).rejects.toMatchObject({ code: 'STORE_LOCKED' });
      expect((await store.listGroups()).map((g) => g.groupId)).toEqual(['billing', 'orders']);
    } finally {
      await store.close();
    }
  });
});

describe('human output helpers', () => {
  it('formats sizes, durations, changes and times', () => {
    expect(
      [0, 1023, 1024, 1536, 10 * 1024 * 1024, 300 * 1024 * 1024 * 1024].map(formatBytes),
    ).toEqual(['0 B', '1023 B', '1.0 KiB', '1.5 KiB', '10.0 MiB', '300 GiB']);
    expect([0.25, 12.4, 1500, 45_000, 61_000, 125_000].map(formatDuration)).toEqual([
      '0.25 ms',
      '12 ms',
      '1.50 s',
      '45 s',
      '1 min 01 s',
      '2 min 05 s',
    ]);
    expect(formatPercentChange(200, 50)).toBe('-75.0%');
    expect(formatTimestamp(1_700_000_000_000)).toBe('2023-11-14 22:13:20Z');
  });

  it('aligns table columns, numbers to the right, without trailing blanks', () => {
    expect(
      renderTable(
        [{ header: 'NAME' }, { header: 'N', align: 'right' }, { header: 'NOTE' }],
        [
          ['a', '10', ''],
          ['bbbbbb', '7', 'x'],
        ],
      ),
    ).toEqual(['NAME     N  NOTE', 'a       10', 'bbbbbb   7  x']);
  });
});
