/**
 * The users and ACL files: they survive a restart of the server (a user logs in again, an ACL
 * still refuses); an update that fails before its rename (a crash between writing the temporary
 * file and renaming it, injected with a FaultyFileSystem) leaves the previous users and ACLs whole
 * and the next update succeeds; a damaged file is CORRUPT_MESSAGE naming it and the server will
 * not start on it rather than serve with entries missing.
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { OffsetStore } from '../../../src/index.js';
import { NodeFileSystem } from '../../../src/io/index.js';
import { API_KEYS, KAFKA_ERROR } from '../../../src/kafka/protocol/index.js';
import {
  ACLS_FILE,
  AclSet,
  USERS_FILE,
  UserCredentials,
  type AclBinding,
} from '../../../src/kafka/security/index.js';
import { FaultyFileSystem } from '../../support/faulty-file-system.js';
import { tempDir } from '../../support/temp-dir.js';
import { RawKafkaClient } from '../support/raw-kafka-client.js';
import { loginScram } from '../support/sasl-login.js';
import { startTestServer, type TestServer } from '../support/server-fixture.js';

const fs = new NodeFileSystem();
let running: TestServer | undefined;

afterEach(async () => {
  await running?.close();
  running = undefined;
});

const DENY_OTHER: AclBinding = {
  principal: 'User:alice',
  host: '*',
  operation: 'All',
  permission: 'ALLOW',
  resourceType: 'Group',
  patternType: 'PREFIXED',
  name: 'mine-',
};

async function serve(dir: string): Promise<TestServer> {
  running = await startTestServer({
    dir,
    server: {
      topics: [{ name: 'orders', partitions: 1 }],
      listeners: [{ securityProtocol: 'SASL_PLAINTEXT' }],
      security: { authorizer: {} },
    },
  });
  return running;
}

describe('users and ACLs on disk', () => {
  it('lose no change when writers change them at once, and are readable by their owner only', async () => {
    const dir = tempDir();
    const names = Array.from({ length: 8 }, (_, i) => `user-${i}`);
    await Promise.all([
      ...names.map((name) => UserCredentials.addUser(fs, dir, name, `${name}-pw`)),
      ...names.map((name) => AclSet.add(fs, dir, [{ ...DENY_OTHER, principal: `User:${name}` }])),
    ]);
    expect((await UserCredentials.load(fs, dir)).list().map((u) => u.name)).toEqual(names);
    expect((await AclSet.load(fs, dir)).acls.map((a) => a.principal).sort()).toEqual(
      names.map((name) => `User:${name}`).sort(),
    );
    for (const file of [USERS_FILE, ACLS_FILE])
      expect((statSync(path.join(dir, file)).mode & 0o777).toString(8), file).toBe('600');
    await Promise.all(names.map((name) => UserCredentials.removeUser(fs, dir, name)));
    expect((await UserCredentials.load(fs, dir)).list()).toEqual([]);
  });

  it("are changed under a lock of their own, not the store's, through a file system that delegates to the machine's", async () => {
    const dir = tempDir();
    const store = await OffsetStore.open({ dir, bucketCount: 1 });
    try {
      // The store holds its directory lock; a user is added meanwhile (a server runs while an operator adds users).
      const delegating = new FaultyFileSystem();
      const started = Date.now();
      await UserCredentials.addUser(delegating, dir, 'alice', 'alice-pw');
      expect(Date.now() - started).toBeLessThan(5000);
      expect((await UserCredentials.load(fs, dir)).list().map((u) => u.name)).toEqual(['alice']);
    } finally {
      await store.close();
    }
  });

  it('survive a restart of the server and the store', async () => {
    const dir = tempDir();
    await UserCredentials.addUser(fs, dir, 'alice', 'pw-1');
    await AclSet.add(fs, dir, [DENY_OTHER]);
    for (let round = 0; round < 2; round++) {
      const t = await serve(dir);
      const client = await RawKafkaClient.connect(t.server.port);
      expect(await loginScram(client, 'SCRAM-SHA-512', 'alice', 'pw-1'), `round ${round}`).toBe(0);
      const described = await client.send(API_KEYS.DescribeGroups, 5, {
        groups: ['mine-1', 'theirs'],
        includeAuthorizedOperations: false,
      });
      expect(described.groups.map((g) => g.errorCode)).toEqual([
        0,
        KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED,
      ]);
      await client.close();
      await t.close();
      running = undefined;
    }
  });

  it('keep the previous version whole when an update dies between the temporary file and the rename', async () => {
    const dir = tempDir();
    await UserCredentials.addUser(fs, dir, 'alice', 'pw-1');
    await AclSet.add(fs, dir, [DENY_OTHER]);
    const usersBefore = readFileSync(path.join(dir, USERS_FILE));
    const aclsBefore = readFileSync(path.join(dir, ACLS_FILE));
    const faulty = new FaultyFileSystem();
    faulty.plan = { failMetaOpAt: 1 }; // the rename
    await expect(UserCredentials.addUser(faulty, dir, 'bob', 'pw-2')).rejects.toMatchObject({
      name: 'OffsetStoreError',
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringMatching(new RegExp(`writing .*${USERS_FILE} failed: .*EIO`)),
    });
    faulty.metaOpCount = 0;
    await expect(UserCredentials.removeUser(faulty, dir, 'alice')).rejects.toThrow(/EIO/);
    faulty.metaOpCount = 0;
    await expect(AclSet.add(faulty, dir, [{ ...DENY_OTHER, name: 'more-' }])).rejects.toThrow(
      /EIO/,
    );
    expect(readFileSync(path.join(dir, USERS_FILE))).toEqual(usersBefore);
    expect(readFileSync(path.join(dir, ACLS_FILE))).toEqual(aclsBefore);
    expect((await UserCredentials.load(fs, dir)).list().map((u) => u.name)).toEqual(['alice']);
    expect((await AclSet.load(fs, dir)).acls).toEqual([DENY_OTHER]);
    // The next update overwrites the leftover temporary file.
    await UserCredentials.addUser(fs, dir, 'carol', 'pw-3');
    expect((await UserCredentials.load(fs, dir)).list().map((u) => u.name)).toEqual([
      'alice',
      'carol',
    ]);
  });

  it('refuse a damaged or hand-edited file with CORRUPT_MESSAGE, and the server does not start on it', async () => {
    const dir = tempDir();
    await UserCredentials.addUser(fs, dir, 'alice', 'pw-1');
    await AclSet.add(fs, dir, [DENY_OTHER]);
    const aclsPath = path.join(dir, ACLS_FILE);
    const good = readFileSync(aclsPath, 'utf8');
    writeFileSync(aclsPath, good.replace('"ALLOW"', '"DENY"'));
    await expect(AclSet.load(fs, dir)).rejects.toThrow(
      expect.objectContaining({
        code: 'CORRUPT_MESSAGE',
        message: expect.stringContaining(ACLS_FILE),
      }),
    );
    await expect(serve(dir)).rejects.toThrow(/CORRUPT_MESSAGE/);
    writeFileSync(aclsPath, good);
    writeFileSync(
      path.join(dir, USERS_FILE),
      readFileSync(path.join(dir, USERS_FILE), 'utf8').slice(0, 40),
    );
    await expect(UserCredentials.load(fs, dir)).rejects.toThrow(
      expect.objectContaining({ code: 'CORRUPT_MESSAGE' }),
    );
  });
});
