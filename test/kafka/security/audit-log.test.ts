/**
 * The audit log: JSON lines, appended, of every denied request (a failed login, an ACL refusal)
 * and every administrative one (DeleteGroups, OffsetDelete, a successful login) with who, from
 * where, on which listener, which API and resource, and the outcome; written without an authorizer
 * too, appended to across restarts, and holding no secret.
 */
import { readFileSync, renameSync, truncateSync } from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/index.js';
import { NodeFileSystem } from '../../../src/io/index.js';
import { API_KEYS } from '../../../src/kafka/protocol/index.js';
import { AclSet, UserCredentials } from '../../../src/kafka/security/index.js';
import { AuditLog, type AuditEvent } from '../../../src/kafka/security/audit-log.js';
import { tempDir } from '../../support/temp-dir.js';
import { RawKafkaClient } from '../support/raw-kafka-client.js';
import { loginPlain } from '../support/sasl-login.js';
import { startTestServer, type TestServer } from '../support/server-fixture.js';

let running: TestServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

function lines(file: string): Record<string, unknown>[] {
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('audit log', () => {
  it('records failed and successful logins, ACL denials and admin requests, across restarts', async () => {
    const dir = tempDir();
    const auditLogFile = path.join(dir, 'audit.jsonl');
    const fs = new NodeFileSystem();
    await UserCredentials.addUser(fs, dir, 'alice', 'alice-pw');
    await AclSet.add(fs, dir, [
      {
        principal: 'User:alice',
        host: '*',
        operation: 'All',
        permission: 'ALLOW',
        resourceType: 'Group',
        patternType: 'LITERAL',
        name: 'mine',
      },
    ]);
    const listeners = [
      {
        securityProtocol: 'SASL_PLAINTEXT' as const,
        saslMechanisms: ['PLAIN' as const],
        allowPlainWithoutTls: true,
      },
    ];
    const clock = new ManualClock();
    running = await startTestServer({
      dir,
      clock,
      server: { listeners, security: { auditLogFile, authorizer: {}, authFailureDelayMs: 10 } },
    });
    const wrong = await RawKafkaClient.connect(running.server.port);
    const failed = loginPlain(wrong, 'alice', 'not-it');
    // The failure's answer waits 10 ms on the server's clock, once its PBKDF2 is done.
    while (running.server.stats().security.failedAuthentications === 0)
      await new Promise((resolve) => setTimeout(resolve, 5));
    clock.advance(10);
    expect(await failed).toBe(58);
    const alice = await RawKafkaClient.connect(running.server.port);
    expect(await loginPlain(alice, 'alice', 'alice-pw')).toBe(0);
    // A group alice may not describe is left out of her listing, which is no refusal to record
    // (each such group was one, so one listing could fill the second's budget of refusals).
    await running.store.commitOffsets('theirs', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    expect((await alice.send(API_KEYS.ListGroups, 4, { statesFilter: [] })).groups).toEqual([]);
    expect(
      (await alice.send(API_KEYS.DeleteGroups, 2, { groupsNames: ['mine', 'theirs'] })).results.map(
        (r) => r.errorCode,
      ),
    ).toEqual([69, 30]);
    await alice.close();
    await running.close();
    running = await startTestServer({ dir, server: { listeners, security: { auditLogFile } } });
    const again = await RawKafkaClient.connect(running.server.port);
    expect(await loginPlain(again, 'alice', 'alice-pw')).toBe(0);
    await again.send(API_KEYS.DeleteGroups, 2, { groupsNames: ['theirs'] });
    await again.close();
    await running.close();
    running = undefined;
    const recorded = lines(auditLogFile).map(({ time, ...rest }) => {
      expect(typeof time).toBe('string');
      return rest;
    });
    const base = { clientHost: '/127.0.0.1', listener: 'SASL_PLAINTEXT' };
    expect(recorded).toEqual([
      {
        ...base,
        principal: 'User:ANONYMOUS',
        api: 'SaslAuthenticate',
        outcome: 'denied',
        reason: 'invalid credentials',
        user: 'alice',
      },
      {
        ...base,
        principal: 'User:alice',
        api: 'SaslAuthenticate',
        outcome: 'allowed',
        reason: 'authenticated with PLAIN',
      },
      {
        ...base,
        principal: 'User:alice',
        api: 'DeleteGroups',
        outcome: 'denied',
        resource: 'Group:theirs',
        operation: 'Delete',
        reason: 'no ACL allows it',
      },
      {
        ...base,
        principal: 'User:alice',
        api: 'DeleteGroups',
        outcome: 'allowed',
        resource: 'Group:mine',
      },
      {
        ...base,
        principal: 'User:alice',
        api: 'SaslAuthenticate',
        outcome: 'allowed',
        reason: 'authenticated with PLAIN',
      },
      {
        ...base,
        principal: 'User:alice',
        api: 'DeleteGroups',
        outcome: 'allowed',
        resource: 'Group:theirs',
      },
    ]);
    expect(readFileSync(auditLogFile, 'utf8')).not.toContain('alice-pw');
    expect(readFileSync(auditLogFile, 'utf8')).not.toContain('not-it');
  });
});

describe('AuditLog bounds and rotation', () => {
  const event = (fields: Partial<AuditEvent> = {}): AuditEvent => ({
    principal: 'User:ANONYMOUS',
    clientHost: '/10.0.0.9',
    listener: 'SASL_PLAINTEXT',
    api: 'SaslAuthenticate',
    outcome: 'denied',
    reason: 'invalid credentials',
    ...fields,
  });

  /** An audit log in a new directory, on a clock the test moves. */
  async function auditLogOnManualClock() {
    const file = path.join(tempDir(), 'audit.jsonl');
    const clock = new ManualClock();
    const log = await AuditLog.open(
      new NodeFileSystem(),
      file,
      () => clock.nowMs(),
      () => {},
    );
    return { file, clock, log };
  }

  it('cuts long fields, writes at most 1000 denials a second and counts the rest', async () => {
    const { file, clock, log } = await auditLogOnManualClock();
    log.record(event({ user: 'u'.repeat(1 << 20), resource: `Group:${'g'.repeat(5000)}` }));
    for (let i = 0; i < 5000; i++) log.record(event({ user: `guess-${i}` }));
    await log.idle();
    clock.advance(1000);
    log.record(event({ user: 'next-second' }));
    log.record(event({ outcome: 'allowed', reason: 'authenticated with PLAIN' }));
    await log.close();
    const written = lines(file);
    expect(String(written[0]!.user)).toMatch(/^u{256}\.\.\. \(1048576 characters\)$/);
    expect(String(written[0]!.resource)).toMatch(/\(5006 characters\)$/);
    // The first, a denial of a resource, does not count against the refused logins' 1000.
    expect(written.filter((l) => l.outcome === 'denied')).toHaveLength(1002);
    expect(written.filter((l) => l.droppedLines !== undefined)).toEqual([
      expect.objectContaining({ droppedLines: 4000 }),
    ]);
    expect(written.at(-1)).toMatchObject({ outcome: 'allowed' });
    expect(readFileSync(file).length).toBeLessThan(512 * 1024);
  });

  it('keeps a budget of its own for ACL denials: a flood of refused logins does not crowd them out, nor they the logins', async () => {
    const { file, log } = await auditLogOnManualClock();
    for (let i = 0; i < 3000; i++) log.record(event({ user: `guess-${i}` }));
    for (let i = 0; i < 10; i++)
      log.record(
        event({
          principal: 'User:alice',
          api: 'OffsetCommit',
          resource: `Group:payroll-${i}`,
          operation: 'Read',
          reason: 'no ACL allows it',
        }),
      );
    await log.close();
    const written = lines(file);
    expect(written.filter((l) => l.api === 'OffsetCommit')).toHaveLength(10);
    expect(written.filter((l) => l.api === 'SaslAuthenticate')).toHaveLength(1000);
    expect(log.droppedCount).toBe(2000);
  });

  it('writes the count of dropped lines even when nothing is recorded after them', async () => {
    const { file, clock, log } = await auditLogOnManualClock();
    for (let i = 0; i < 1000; i++) log.record(event({ user: `guess-${i}` }));
    await log.idle();
    // The second's budget is spent: these are dropped, and nothing else comes before the close.
    for (let i = 0; i < 500; i++) log.record(event({ user: `more-${i}` }));
    await log.close();
    const written = lines(file);
    expect(written.filter((l) => l.outcome === 'denied')).toHaveLength(1000);
    // Counted in a line or more (one per write the file took meanwhile), the last line a count.
    const counted = written.reduce((sum, l) => sum + Number(l.droppedLines ?? 0), 0);
    expect(counted).toBe(500);
    expect(written.at(-1)).toHaveProperty('droppedLines');
    expect(log.droppedCount).toBe(500);
  });

  it('goes on at the end of the file after a copytruncate, and in a new file after the old one was renamed away', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'audit.jsonl');
    const log = await AuditLog.open(
      new NodeFileSystem(),
      file,
      () => 0,
      () => {},
    );
    log.record(event({ user: 'before' }));
    await log.idle();
    truncateSync(file, 0); // copytruncate
    log.record(event({ user: 'after-truncate' }));
    await log.idle();
    const afterTruncate = readFileSync(file);
    expect(afterTruncate.includes(0)).toBe(false);
    expect(lines(file).map((l) => l.user)).toEqual(['after-truncate']);
    renameSync(file, `${file}.1`); // rename-style rotation, no new file made
    log.record(event({ user: 'after-rename' }));
    await log.close();
    expect(lines(`${file}.1`).map((l) => l.user)).toEqual(['after-truncate']);
    expect(lines(file).map((l) => l.user)).toEqual(['after-rename']);
  });
});
