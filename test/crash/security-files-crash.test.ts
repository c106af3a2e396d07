/**
 * A process killed (SIGKILL) while it updates the users or ACL file, after the new version's
 * temporary file is written and fdatasynced and before the rename, leaves the previous version
 * whole: every update acknowledged before the kill is there, the one in flight is not, and the file
 * reads back with its checksum.
 */
import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { NodeFileSystem } from '../../src/io/index.js';
import { AclSet, UserCredentials } from '../../src/kafka/security/index.js';
import { exited, forkTs } from '../support/fork-child.js';
import { tempDir } from '../support/temp-dir.js';

const CHILD = fileURLToPath(new URL('./security-files-child.ts', import.meta.url));

describe('security files under SIGKILL', () => {
  it.each(['users', 'acls'] as const)(
    '%s: a kill between the temporary file and the rename keeps every acknowledged update',
    async (kind) => {
      const dir = tempDir();
      const child = forkTs(CHILD, [dir, kind, '3']);
      const acknowledged: number[] = [];
      await new Promise<void>((resolve) =>
        child.on('message', (m: { done?: number; tempWritten?: string }) => {
          if (m.done !== undefined) acknowledged.push(m.done);
          if (m.tempWritten !== undefined) resolve();
        }),
      );
      child.kill('SIGKILL');
      await exited(child);
      expect(acknowledged).toEqual([0, 1, 2]);
      const fs = new NodeFileSystem();
      if (kind === 'users')
        expect((await UserCredentials.load(fs, dir)).list().map((u) => u.name)).toEqual([
          'user-0',
          'user-1',
          'user-2',
        ]);
      else expect((await AclSet.load(fs, dir)).acls.map((a) => a.name)).toEqual(['g0', 'g1', 'g2']);
    },
  );
});
