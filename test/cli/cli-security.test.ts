/**
 * The security commands as a user runs them, as child processes: `users add` reads the password
 * from stdin (--password-stdin) and refuses to run without it when stdin is not a terminal, and
 * the users file it writes holds no password; `acls add|list|remove` with kafka-acls.sh's flags;
 * `serve` with a PLAINTEXT and a SASL_SSL listener, TLS files, --authorizer and --audit-log serves
 * a SCRAM client only what its ACLs allow, re-reads the ACLs on SIGHUP, and audits the denials.
 */
import { Admin } from '@platformatic/kafka';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { OffsetStore } from '../../src/index.js';
import { USERS_FILE } from '../../src/kafka/index.js';
import { testCertificates } from '../kafka/support/test-certificates.js';
import { tempDir } from '../support/temp-dir.js';
import { REPO_DIR, json, runCli } from './cli-harness.js';

const MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

/** Runs the CLI with `input` on stdin. */
function runWithStdin(
  args: string[],
  input: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], {
    cwd: REPO_DIR,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  child.stdin.end(input);
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

async function newStore(): Promise<string> {
  const dir = tempDir();
  await (await OffsetStore.open({ dir, bucketCount: 2 })).close();
  return dir;
}

/** Waits for a line of stdout matching `pattern`. */
function lineMatching(child: ChildProcess, pattern: RegExp): Promise<string> {
  let seen = '';
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (c: Buffer) => {
      seen += c.toString();
      const line = seen.split('\n').find((l) => pattern.test(l));
      if (line !== undefined) resolve(line);
    });
    child.once('exit', (code) =>
      reject(new Error(`exited ${code} before printing ${pattern}: ${seen}`)),
    );
  });
}

describe('offset-store users and acls', () => {
  it('users add reads the password from stdin and stores only SCRAM verifiers; list and remove', async () => {
    const dir = await newStore();
    const added = await runWithStdin(
      ['users', 'add', 'alice', '--dir', dir, '--password-stdin'],
      'a-long-Secret-42\n',
    );
    expect(added.code, added.stderr).toBe(0);
    const noTty = await runWithStdin(['users', 'add', 'bob', '--dir', dir], 'typed\n');
    expect(noTty.code).toBe(2);
    expect(noTty.stderr).toMatch(/--password-stdin/);
    const tooMany = await runWithStdin(
      ['users', 'add', 'bob', '--dir', dir, '--password-stdin', '--iterations', '3000000000'],
      'pw\n',
    );
    expect([tooMany.code, tooMany.stderr]).toEqual([
      2,
      expect.stringMatching(/--iterations must be an integer in \[4096, 16384\]/),
    ]);
    const file = readFileSync(path.join(dir, USERS_FILE), 'utf8');
    expect(file).not.toContain('a-long-Secret-42');
    expect(file).not.toContain(Buffer.from('a-long-Secret-42').toString('base64'));
    expect(file).toContain('storedKey');
    const listed = json(await runCli(['users', 'list', '--dir', dir, '--json']));
    expect(listed.users).toEqual([
      {
        name: 'alice',
        mechanisms: [
          { mechanism: 'SCRAM-SHA-256', iterations: 4096 },
          { mechanism: 'SCRAM-SHA-512', iterations: 4096 },
        ],
      },
    ]);
    expect((await runCli(['users', 'remove', 'alice', '--dir', dir])).code).toBe(0);
    const again = await runCli(['users', 'remove', 'alice', '--dir', dir]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^error: INVALID_REQUEST: no user alice in /);
    // A directory without a store is INVALID_CONFIG, as for every other command.
    const noStore = await runCli(['users', 'list', '--dir', tempDir()]);
    expect(noStore.code).toBe(1);
    expect(noStore.stderr).toMatch(/^error: INVALID_CONFIG: no offset store in /);
  });

  it('acls add, list and remove with Kafka-like flags', async () => {
    const dir = await newStore();
    const added = await runCli([
      'acls',
      'add',
      '--dir',
      dir,
      '--allow-principal',
      'User:alice',
      '--operation',
      'Read',
      '--operation',
      'Describe',
      '--group',
      'team-',
      '--resource-pattern-type',
      'prefixed',
    ]);
    expect(added.code, added.stderr).toBe(0);
    const listed = json(await runCli(['acls', 'list', '--dir', dir, '--json']));
    expect(listed.acls).toEqual([
      {
        principal: 'User:alice',
        host: '*',
        operation: 'Read',
        permission: 'ALLOW',
        resourceType: 'Group',
        patternType: 'PREFIXED',
        name: 'team-',
      },
      {
        principal: 'User:alice',
        host: '*',
        operation: 'Describe',
        permission: 'ALLOW',
        resourceType: 'Group',
        patternType: 'PREFIXED',
        name: 'team-',
      },
    ]);
    expect(
      (
        await runCli([
          'acls',
          'add',
          '--dir',
          dir,
          '--allow-principal',
          'alice',
          '--operation',
          'Read',
          '--group',
          'g',
        ])
      ).code,
    ).toBe(2);
    expect(
      (
        await runCli([
          'acls',
          'add',
          '--dir',
          dir,
          '--allow-principal',
          'User:a',
          '--operation',
          'Write',
          '--group',
          'g',
        ])
      ).code,
    ).toBe(2);
    const removed = await runCli([
      'acls',
      'remove',
      '--dir',
      dir,
      '--allow-principal',
      'User:alice',
      '--operation',
      'Describe',
      '--group',
      'team-',
      '--resource-pattern-type',
      'prefixed',
      '--json',
    ]);
    expect(json(removed)).toEqual({ removed: 1 });
    const none = await runCli([
      'acls',
      'remove',
      '--dir',
      dir,
      '--allow-principal',
      'User:nobody',
      '--operation',
      'Read',
      '--group',
      'g',
      '--json',
    ]);
    expect(none.code).toBe(1);
    expect(JSON.parse(none.stderr).error).toMatchObject({ code: 'INVALID_REQUEST' });
    expect(json(await runCli(['acls', 'list', '--dir', dir, '--json'])).acls).toHaveLength(1);
    // A host with no principal of its kind: refused, not dropped (which stored an ALLOW for every host).
    const hostAlone = await runCli([
      'acls',
      'add',
      '--dir',
      dir,
      '--allow-principal',
      'User:alice',
      '--deny-host',
      '10.0.0.5',
      '--operation',
      'Read',
      '--group',
      'g',
    ]);
    expect(hostAlone.code).toBe(2);
    expect(hostAlone.stderr).toMatch(/--deny-host applies to the ACLs of --deny-principal/);
    expect(json(await runCli(['acls', 'list', '--dir', dir, '--json'])).acls).toHaveLength(1);
  });

  it('serve: SASL_SSL beside PLAINTEXT, ACLs enforced, re-read on SIGHUP, denials audited', async () => {
    const dir = await newStore();
    const certs = testCertificates();
    writeFileSync(path.join(dir, 'server.pem'), certs.serverCert);
    writeFileSync(path.join(dir, 'server.key'), certs.serverKey);
    expect(
      (
        await runWithStdin(
          ['users', 'add', 'alice', '--dir', dir, '--password-stdin'],
          'alice-pw\n',
        )
      ).code,
    ).toBe(0);
    expect(
      (
        await runCli([
          'acls',
          'add',
          '--dir',
          dir,
          '--allow-principal',
          'User:alice',
          '--operation',
          'All',
          '--group',
          'team-',
          '--resource-pattern-type',
          'prefixed',
        ])
      ).code,
    ).toBe(0);
    expect(
      (
        await runCli([
          'acls',
          'add',
          '--dir',
          dir,
          '--allow-principal',
          'User:alice',
          '--operation',
          'Read',
          '--topic',
          '*',
        ])
      ).code,
    ).toBe(0);
    const audit = path.join(dir, 'audit.jsonl');
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        MAIN,
        'serve',
        '--dir',
        dir,
        '--json',
        '--topic',
        'orders:2',
        '--listen',
        'PLAINTEXT://127.0.0.1:0',
        '--listen',
        'SASL_SSL://127.0.0.1:0',
        '--tls-cert',
        path.join(dir, 'server.pem'),
        '--tls-key',
        path.join(dir, 'server.key'),
        '--authorizer',
        '--super-user',
        'User:admin',
        '--audit-log',
        audit,
      ],
      { cwd: REPO_DIR, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    children.push(child);
    const started = JSON.parse(await lineMatching(child, /^\{/)) as {
      listeners: { name: string; port: number }[];
    };
    const saslPort = started.listeners.find((l) => l.name === 'SASL_SSL')!.port;
    const admin = new Admin({
      clientId: 'cli-sec',
      bootstrapBrokers: [`127.0.0.1:${saslPort}`],
      retries: 0,
      tls: { ca: certs.caCert },
      sasl: { mechanism: 'SCRAM-SHA-256', username: 'alice', password: 'alice-pw' },
    });
    const commit = (groupId: string) =>
      admin.alterConsumerGroupOffsets({
        groupId,
        topics: [{ name: 'orders', partitionOffsets: [{ partition: 0, offset: 3n }] }],
      });
    await commit('team-a');
    await expect(commit('elsewhere')).rejects.toThrow();
    expect(
      (
        await runCli([
          'acls',
          'add',
          '--dir',
          dir,
          '--allow-principal',
          'User:alice',
          '--operation',
          'Read',
          '--group',
          'elsewhere',
        ])
      ).code,
    ).toBe(0);
    const reloaded = lineMatching(child, /"reloaded"/);
    child.kill('SIGHUP');
    await reloaded;
    await commit('elsewhere');
    await admin.close();
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    const lines = readFileSync(audit, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, string>);
    // The client asks FindCoordinator first, which needs Describe on the group: that is where it is stopped.
    expect(lines).toContainEqual(
      expect.objectContaining({
        principal: 'User:alice',
        clientHost: '/127.0.0.1',
        api: 'FindCoordinator',
        resource: 'Group:elsewhere',
        operation: 'Describe',
        outcome: 'denied',
        listener: 'SASL_SSL',
      }),
    );
    expect(lines).toContainEqual(
      expect.objectContaining({
        principal: 'User:alice',
        api: 'SaslAuthenticate',
        outcome: 'allowed',
      }),
    );
    const store = await OffsetStore.open({ dir });
    expect((await store.fetchOffsets('elsewhere', [{ tableId: 1, bucketId: 0 }]))[0]?.offset).toBe(
      3,
    );
    await store.close();
  });
});
