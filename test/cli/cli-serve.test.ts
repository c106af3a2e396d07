/**
 * `offset-store serve` as a child process, the way a user runs it: it prints the address it listens
 * on (port 0 picks a free one; `--json` prints `{"host","port"}`), serves Kafka clients (kafkajs and
 * @platformatic/kafka here), and on SIGTERM or SIGINT lets requests in flight finish (a held Fetch is
 * answered), closes the store and exits 0; what clients committed is in the store afterwards.
 * Usage mistakes exit 2, a topic the catalog refuses or an address in use exit 1.
 */
import { Admin } from '@platformatic/kafka';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock, OffsetStore } from '../../src/index.js';
import { CATALOG_FILE } from '../../src/kafka/index.js';
import { API_KEYS } from '../../src/kafka/protocol/index.js';
import { RawKafkaClient, TEST_SOFTWARE } from '../kafka/support/raw-kafka-client.js';
import { testCertificates } from '../kafka/support/test-certificates.js';
import { tempDir } from '../support/temp-dir.js';
import { REPO_DIR, runCli } from './cli-harness.js';

const MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

interface Serving {
  readonly child: ChildProcess;
  /** The first line of stdout. */
  readonly firstLine: string;
  stdout: string;
  stderr: string;
  /** Resolves with the exit code. */
  readonly exited: Promise<number | null>;
}

const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

/** Starts `offset-store serve <args>` and resolves once it printed its first line. */
function serve(args: readonly string[]): Promise<Serving> {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, 'serve', ...args], {
    cwd: REPO_DIR,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  return new Promise((resolve, reject) => {
    const serving = { child, firstLine: '', stdout: '', stderr: '', exited };
    child.stderr!.on('data', (chunk: Buffer) => {
      serving.stderr += chunk.toString();
    });
    child.stdout!.on('data', (chunk: Buffer) => {
      serving.stdout += chunk.toString();
      const newline = serving.stdout.indexOf('\n');
      if (newline >= 0 && serving.firstLine === '')
        resolve({
          ...serving,
          firstLine: serving.stdout.slice(0, newline),
          get stdout() {
            return serving.stdout;
          },
          get stderr() {
            return serving.stderr;
          },
        });
    });
    void exited.then((code) =>
      reject(
        new Error(`serve exited with ${code} before printing its address:\n${serving.stderr}`),
      ),
    );
  });
}

describe('offset-store serve', () => {
  it('--json prints {"host","port"}, serves clients, and on SIGTERM answers the held Fetch, closes the store and exits 0', async () => {
    const dir = tempDir();
    const serving = await serve([
      '--dir',
      dir,
      '--listen',
      '127.0.0.1:0',
      '--json',
      '--topic',
      'orders:3',
    ]);
    const { host, port } = JSON.parse(serving.firstLine) as { host: string; port: number };
    expect(host).toBe('127.0.0.1');
    expect(port).toBeGreaterThan(0);

    const kafka = new Kafka({
      clientId: 'serve-test',
      brokers: [`${host}:${port}`],
      logLevel: logLevel.NOTHING,
    });
    const kafkajs = kafka.admin();
    await kafkajs.connect();
    expect((await kafkajs.fetchTopicOffsets('orders')).map((p) => p.partition)).toEqual([0, 1, 2]);
    const plt = new Admin({ clientId: 'serve-test', bootstrapBrokers: [`${host}:${port}`] });
    await plt.alterConsumerGroupOffsets({
      groupId: 'served',
      topics: [{ name: 'orders', partitionOffsets: [{ partition: 1, offset: 41n }] }],
    });
    expect(
      (await kafkajs.fetchOffsets({ groupId: 'served', topics: ['orders'] }))[0]!.partitions[1]!
        .offset,
    ).toBe('41');
    await plt.close();
    await kafkajs.disconnect();

    const fetcher = await RawKafkaClient.connect(port);
    const held = fetcher.send(API_KEYS.Fetch, 11, {
      maxWaitMs: 60_000,
      minBytes: 1,
      topics: [
        {
          topic: 'orders',
          partitions: [{ partition: 0, fetchOffset: 0n, partitionMaxBytes: 1024 }],
        },
      ],
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    serving.child.kill('SIGTERM');
    expect(
      (await held).responses[0]!.partitions[0]!.errorCode,
      'the held Fetch is answered at once',
    ).toBe(0);
    expect(await serving.exited).toBe(0);
    expect(serving.stdout.trim()).toBe(serving.firstLine);
    await fetcher.closed;

    const store = await OffsetStore.open({ dir });
    expect((await store.fetchOffsets('served', [{ tableId: 1, bucketId: 1 }]))[0]?.offset).toBe(41);
    await store.close();
    expect(JSON.parse(readFileSync(path.join(dir, CATALOG_FILE), 'utf8')).topics).toEqual([
      expect.objectContaining({ name: 'orders', tableId: 1, partitions: 3 }),
    ]);
  });

  it('prints where it listens and stops on SIGINT', async () => {
    const dir = tempDir();
    const serving = await serve(['--dir', dir, '--listen', '127.0.0.1:0']);
    const port = Number(/on 127\.0\.0\.1:(\d+);/.exec(serving.firstLine)?.[1]);
    expect(port, serving.firstLine).toBeGreaterThan(0);
    const client = await RawKafkaClient.connect(port);
    expect((await client.send(API_KEYS.ApiVersions, 3, TEST_SOFTWARE)).errorCode).toBe(0);
    serving.child.kill('SIGINT');
    expect(await serving.exited).toBe(0);
    expect(serving.stdout).toMatch(/SIGINT: closing[\s\S]*Stopped\./);
    await client.closed;
  });

  it('stops cleanly on SIGTERM and SIGHUP reloads, after whatever read its output has gone (it used to exit 0 at once, the store not closed)', async () => {
    const dir = tempDir();
    const serving = await serve(['--dir', dir, '--listen', '127.0.0.1:0']);
    const port = Number(/on 127\.0\.0\.1:(\d+);/.exec(serving.firstLine)?.[1]);
    const client = await RawKafkaClient.connect(port);
    expect((await client.send(API_KEYS.ApiVersions, 3, TEST_SOFTWARE)).errorCode).toBe(0);
    serving.child.stdout!.destroy(); // the reader of its output is gone (a closed pipe)
    serving.child.kill('SIGHUP'); // reloads users and ACLs, says so on stdout
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(serving.child.exitCode, 'still serving after SIGHUP').toBe(null);
    expect((await client.send(API_KEYS.ApiVersions, 3, TEST_SOFTWARE)).errorCode).toBe(0);
    serving.child.kill('SIGTERM');
    expect(await serving.exited).toBe(0);
    await client.closed;
    const manifest = JSON.parse(readFileSync(path.join(dir, 'store.json'), 'utf8')) as {
      buckets: { endExact: boolean }[];
    };
    expect(
      manifest.buckets.every((b) => b.endExact),
      'closed cleanly',
    ).toBe(true);
  });

  it('expires the offsets of a group without members by --offsets-retention, not by the default: a group idle for 8 days is kept under 30d', async () => {
    const idleSince = Date.now() - 8 * 24 * 3600 * 1000;
    for (const [retention, kept] of [
      ['30d', true],
      ['7d', false],
    ] as const) {
      const dir = tempDir();
      const before = await OffsetStore.open({ dir, clock: new ManualClock(idleSince) });
      await before.commitOffsets('idle', [{ tableId: 1, bucketId: 0, offset: 123456 }]);
      await before.close();
      const serving = await serve([
        ...['--dir', dir, '--listen', '127.0.0.1:0'],
        ...['--offsets-retention', retention, '--offsets-retention-check-interval-ms', '50'],
      ]);
      await new Promise((resolve) => setTimeout(resolve, 400));
      serving.child.kill('SIGTERM');
      expect(await serving.exited).toBe(0);
      const after = await OffsetStore.open({ dir });
      expect(
        (await after.fetchOffsets('idle', [{ tableId: 1, bucketId: 0 }]))[0]?.offset,
        retention,
      ).toBe(kept ? 123456 : undefined);
      await after.close();
    }
  });

  it('serves a store compacted by a strategy module with --strategy <path>, and says so when it is not given', async () => {
    const dir = tempDir();
    const module = path.join(REPO_DIR, 'examples', 'compaction', 'cost-benefit.mjs');
    await (await OffsetStore.open({ dir, compaction: { strategy: module } })).close();
    for (const args of [[], ['--strategy', module]]) {
      const serving = await serve(['--dir', dir, '--listen', '127.0.0.1:0', ...args]);
      await new Promise((resolve) => setTimeout(resolve, 300));
      serving.child.kill('SIGTERM');
      expect(await serving.exited).toBe(0);
      if (args.length === 0)
        expect(serving.stderr).toMatch(
          /compacted by the strategy module .*--strategy on the command line/,
        );
      else expect(serving.stderr).toBe('');
    }
  });

  it('exits 2 for bad usage (a topic name or a partition count the catalog refuses included, before the store opens), 1 for an address in use', async () => {
    const dir = tempDir();
    for (const args of [
      ['--listen', 'nowhere'],
      ['--listen', '0.0.0.0:9092'],
      ['--topic', 'orders'],
      ['--listen', '127.0.0.1:70000'],
      ['--default-partitions', '0'],
      ['--default-partitions', '99999999'],
      ['--topic', 'orders:99999999'],
    ]) {
      const run = await runCli(['serve', '--dir', dir, ...args]);
      expect([run.code, args.join(' ')]).toEqual([2, args.join(' ')]);
    }
    const badTopic = await runCli([
      'serve',
      '--dir',
      dir,
      '--listen',
      '127.0.0.1:0',
      '--topic',
      'bad name:2',
    ]);
    expect(badTopic.code).toBe(2);
    expect(badTopic.stderr).toMatch(/^error: --topic "bad name:2": /);
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const busy = await runCli([
      'serve',
      '--dir',
      dir,
      '--listen',
      `127.0.0.1:${(taken.address() as net.AddressInfo).port}`,
    ]);
    taken.close();
    expect(busy.code).toBe(1);
    expect(busy.stderr).toMatch(/INVALID_CONFIG: cannot listen on .*EADDRINUSE/);
  });

  it('refuses operator mistakes with a usage error or an error code naming the option, never an internal error', async () => {
    const notPem = path.join(tempDir(), 'not.pem');
    writeFileSync(notPem, 'not a certificate\n');
    const aDirectory = tempDir();
    const cases: [string[], number, RegExp][] = [
      [
        ['--listen', '127.0.0.1:0', '--tls-cert', notPem],
        2,
        /--tls-cert needs an SSL or SASL_SSL listener/,
      ],
      [
        ['--listen', '127.0.0.1:0', '--tls-client-auth', 'required'],
        2,
        /--tls-client-auth needs an SSL/,
      ],
      [
        ['--listen', '127.0.0.1:0', '--sasl-mechanism', 'PLAIN'],
        2,
        /--sasl-mechanism needs a SASL_PLAINTEXT or SASL_SSL listener/,
      ],
      [
        ['--listen', 'SSL://127.0.0.1:0', '--tls-cert', aDirectory, '--tls-key', aDirectory],
        2,
        /--tls-cert: cannot read/,
      ],
      [
        ['--listen', 'SSL://127.0.0.1:0', '--tls-cert', notPem, '--tls-key', notPem],
        2,
        /not a usable PEM certificate and key/,
      ],
      ...['0s', '30', '1w', '36501d'].map((value): [string[], number, RegExp] => [
        ['--listen', '127.0.0.1:0', '--offsets-retention', value],
        2,
        /--offsets-retention must be <n>s, <n>m, <n>h or <n>d, from 1s to 36500d/,
      ]),
      [
        ['--listen', '127.0.0.1:0', '--default-partitions', '100000'],
        2,
        /--default-partitions must be an integer in \[1, 65536\], got "100000"/,
      ],
      [
        ['--listen', '127.0.0.1:0', '--connections-per-address-max', '0'],
        2,
        /--connections-per-address-max must be an integer >= 1, got "0"/,
      ],
      [['--listen', '127.0.0.1:0', '--backup-every', '1h'], 2, /--backup-every needs --backup-dir/],
      [
        ['--listen', '127.0.0.1:0', '--backup-dir', aDirectory, '--backup-every', '90'],
        2,
        /--backup-every must be 0 or <n>s, <n>m, <n>h or <n>d/,
      ],
      [
        ['--listen', '127.0.0.1:0', '--backup-dir', aDirectory, '--backup-every', '30d'],
        2,
        /from 1s to 24d/,
      ],
      [
        ['--listen', '127.0.0.1:0', '--backup-dir', aDirectory, '--backup-keep', '-1'],
        2,
        /--backup-keep must be an integer >= 0, got "-1"/,
      ],
      [
        ['--listen', '127.0.0.1:0', '--backup-dir', '/', '--backup-every', '0'],
        2,
        /one would hold the other/,
      ],
      [
        ['--listen', '127.0.0.1:0', '--audit-log', path.join(aDirectory, 'missing', 'audit.log')],
        1,
        /INVALID_CONFIG: audit log .* cannot be opened/,
      ],
    ];
    // Each in a directory of its own: those that get as far as opening the store run at once.
    const runs = await Promise.all(
      cases.map(([args]) => runCli(['serve', '--dir', tempDir(), ...args])),
    );
    runs.forEach((run, i) => {
      const [args, code, message] = cases[i]!;
      expect([args.join(' '), run.code], run.stderr).toEqual([args.join(' '), code]);
      expect(run.stderr).toMatch(message);
      expect(run.stderr).not.toMatch(/internal error/);
    });
  });

  it('refuses a --tls-ca file without a certificate that parses with exit 2 (TLS ignored it, and client certificates went unverified)', async () => {
    const certs = testCertificates();
    const material = tempDir();
    const file = (name: string, text: string) => {
      writeFileSync(path.join(material, name), text);
      return path.join(material, name);
    };
    const tls = [
      '--listen',
      'SSL://127.0.0.1:0',
      '--tls-cert',
      file('server.pem', certs.serverCert),
      '--tls-key',
      file('server.key', certs.serverKey),
      '--tls-ca',
    ];
    // A certificate block whose content is not a certificate: TLS skips it and every one after it.
    const damaged = certs.caCert.replace(/^(-----BEGIN CERTIFICATE-----\n)..../m, '$1AAAA');
    const cases: [string, RegExp][] = [
      [file('not.pem', 'not a certificate\n'), /--tls-ca: .*holds no PEM certificate/],
      [file('key-only.pem', certs.clientKey), /--tls-ca: .*holds no PEM certificate/],
      [
        file('damaged.pem', `${certs.caCert}${damaged}`),
        /--tls-ca: .*certificate 2 does not parse/,
      ],
    ];
    // A file that is not refused serves until the time out.
    const runs = await Promise.all(
      cases.map(([ca]) => runCli(['serve', '--dir', tempDir(), ...tls, ca], { timeoutMs: 40_000 })),
    );
    runs.forEach((run, i) => {
      const [ca, message] = cases[i]!;
      expect([ca, run.code], run.stderr).toEqual([ca, 2]);
      expect(run.stderr).toMatch(message);
    });
  });

  it('--backup-dir reached through a symbolic link into the store is refused at once, and nothing is made', async () => {
    const dir = tempDir();
    const link = path.join(tempDir(), 'link-to-store');
    symlinkSync(dir, link);
    const run = await runCli([
      'serve',
      '--dir',
      dir,
      '--listen',
      '127.0.0.1:0',
      '--backup-dir',
      path.join(link, 'backups'),
    ]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/one would hold the other once links are resolved/);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('--backup-dir: SIGUSR2 backs the served store up into a new folder, the newest --backup-keep kept, leftovers of interrupted ones removed, the folder held while serving', async () => {
    const dir = tempDir();
    const backups = tempDir();
    const seeded = await OffsetStore.open({ dir, bucketCount: 4 });
    await seeded.commitOffsets('orders', [
      { tableId: 1, bucketId: 0, offset: 42 },
      { tableId: 1, bucketId: 1, offset: 7, metadata: 'm' },
    ]);
    await seeded.close();
    // What a backup interrupted by a crash leaves, and something of the operator's.
    mkdirSync(path.join(backups, 'offsets-2020-01-01T00.00.00.000Z.partial'));
    writeFileSync(
      path.join(backups, 'offsets-2020-01-01T00.00.00.000Z.partial', 'BACKUP-IN-PROGRESS'),
      '',
    );
    mkdirSync(path.join(backups, 'notes'));
    const serving = await serve([
      '--dir',
      dir,
      '--listen',
      '127.0.0.1:0',
      '--json',
      '--backup-dir',
      backups,
      '--backup-every',
      '0',
      '--backup-keep',
      '1',
    ]);
    const events = () =>
      serving.stdout
        .split('\n')
        .filter((line) => line.includes('"event":"backup"'))
        .map((line) => JSON.parse(line) as { dir: string; buckets: number; removed: string[] });
    const waitFor = async (count: number) => {
      for (let i = 0; i < 500 && events().length < count; i++)
        await new Promise((resolve) => setTimeout(resolve, 20));
      expect(events(), serving.stderr).toHaveLength(count);
    };
    serving.child.kill('SIGUSR2');
    await waitFor(1);
    // A millisecond apart at least: each backup is named after its time.
    await new Promise((resolve) => setTimeout(resolve, 5));
    serving.child.kill('SIGUSR2');
    await waitFor(2);
    const [first, second] = events();
    expect(path.dirname(first!.dir)).toBe(backups);
    expect(path.basename(first!.dir)).toMatch(
      /^offsets-\d{4}-\d{2}-\d{2}T\d{2}\.\d{2}\.\d{2}\.\d{3}Z$/,
    );
    expect(first!.buckets).toBe(4);
    expect(first!.removed).toEqual([
      path.join(backups, 'offsets-2020-01-01T00.00.00.000Z.partial'),
    ]);
    expect(second!.removed).toEqual([first!.dir]);
    // The folder is held while the server runs: another served store cannot prune it too.
    expect(readdirSync(backups).sort()).toEqual(['LOCK', 'notes', path.basename(second!.dir)]);
    const other = tempDir();
    const rival = await runCli([
      'serve',
      '--dir',
      other,
      '--listen',
      '127.0.0.1:0',
      '--backup-dir',
      backups,
    ]);
    expect(rival.code, rival.stderr).toBe(1);
    expect(rival.stderr).toMatch(
      /^error: STORE_LOCKED: --backup-dir .* is in use by another offset-store serve/,
    );
    serving.child.kill('SIGTERM');
    expect(await serving.exited).toBe(0);
    expect(readdirSync(backups).sort()).toEqual(['notes', path.basename(second!.dir)]);
    const restored = await OffsetStore.open({ dir: second!.dir });
    try {
      expect(
        (await restored.fetchOffsets('orders')).map((o) => [o!.bucketId, o!.offset, o!.metadata]),
      ).toEqual([
        [0, 42, ''],
        [1, 7, 'm'],
      ]);
    } finally {
      await restored.close();
    }
  });
});
