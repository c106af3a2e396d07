/**
 * The users and ACL files: they survive a restart of the server (a user logs in again, an ACL
 * still refuses); an update that fails before its rename (a crash between writing the temporary
 * file and renaming it, injected with a FaultyFileSystem) leaves the previous users and ACLs whole
 * and the next update succeeds; a damaged file is CORRUPT_MESSAGE naming it and the server will
 * not start on it rather than serve with entries missing. What the settings leave open that the
 * files suggest is meant closed (ACLs not enforced, users not asked for, a listener without
 * authentication beside a SASL one, a file others can read or change) is warned of.
 */
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
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
  openDoors,
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

describe('doors the settings leave open', () => {
  it('are warned of at start and at every reload: ACLs without an authorizer, users without SASL, a users file others can read', async () => {
    const dir = tempDir();
    await UserCredentials.addUser(fs, dir, 'alice', 'pw-1');
    await AclSet.add(fs, dir, [DENY_OTHER]);
    running = await startTestServer({
      dir,
      server: { listeners: [{ securityProtocol: 'PLAINTEXT' }] },
    });
    expect(running.warnings).toEqual([
      expect.stringMatching(/the 1 ACL\(s\) of kafka-acls.json are not enforced: .*--authorizer/),
      expect.stringMatching(/the 1 user\(s\) of kafka-users.json are never asked for/),
    ]);
    running.warnings.length = 0;
    chmodSync(path.join(dir, USERS_FILE), 0o644);
    chmodSync(path.join(dir, ACLS_FILE), 0o666);
    await running.server.reloadSecurity();
    expect(running.warnings).toEqual([
      expect.stringMatching(/not enforced/),
      expect.stringMatching(/never asked for/),
      expect.stringMatching(
        /kafka-users.json \(mode 644\) can be read by other users of this machine: .*dictionary attack/,
      ),
      expect.stringMatching(
        /kafka-acls.json \(mode 666\) can be changed by other users of this machine: they could give themselves access/,
      ),
    ]);
    await running.close();
    running = undefined;
    // Enforced, asked for, and owner-only: nothing to warn of.
    chmodSync(path.join(dir, USERS_FILE), 0o600);
    chmodSync(path.join(dir, ACLS_FILE), 0o600);
    running = await serve(dir);
    expect(running.warnings).toEqual([]);
  });

  it('include a listener serving clients that have not logged in beside a SASL one, unless ACLs are enforced and deny by default', () => {
    const sasl = { name: 'SASL_PLAINTEXT', securityProtocol: 'SASL_PLAINTEXT' } as const;
    const plain = { name: 'PLAINTEXT', securityProtocol: 'PLAINTEXT' } as const;
    const certified = {
      name: 'SSL',
      securityProtocol: 'SSL',
      tls: { requireClientCertificate: true },
    } as const;
    const none = { users: 1, acls: 1 };
    expect(openDoors([sasl, plain], undefined, none)).toEqual([
      expect.stringMatching(/the 1 ACL\(s\) .* not enforced/),
      expect.stringMatching(
        /listener PLAINTEXT \(PLAINTEXT\) serves clients that have not authenticated .* beside SASL listener SASL_PLAINTEXT: with no authorizer/,
      ),
    ]);
    expect(openDoors([sasl, plain], { allowEveryoneIfNoAclFound: true }, none)).toEqual([
      expect.stringMatching(/allowEveryoneIfNoAclFound lets them do whatever no ACL names/),
    ]);
    expect(openDoors([sasl, plain], { allowEveryoneIfNoAclFound: false }, none)).toEqual([]);
    expect(openDoors([sasl, certified], undefined, { users: 1, acls: 0 })).toEqual([]);
    expect(openDoors([plain], undefined, { users: 0, acls: 0 })).toEqual([]);
  });
});
