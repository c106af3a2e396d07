/**
 * Child of security-files-crash.test.ts: adds users (or ACLs) one by one through a file system that
 * reports over IPC when an update's temporary file is written and durable, then stops before the
 * rename until the parent SIGKILLs it.
 * argv: <dir> <users|acls> <updates before the one that hangs>
 */
import { NodeFileSystem, type FileSystem } from '../../src/io/index.js';
import { AclSet, UserCredentials } from '../../src/kafka/security/index.js';

const [dir, kind, countText] = process.argv.slice(2) as [string, 'users' | 'acls', string];
const completed = Number(countText);
const inner = new NodeFileSystem();
let renames = 0;
const fs: FileSystem = {
  open: (p, flags) => inner.open(p, flags),
  readFile: (p) => inner.readFile(p),
  readdir: (p) => inner.readdir(p),
  mkdir: (p) => inner.mkdir(p),
  unlink: (p) => inner.unlink(p),
  removeTree: (p) => inner.removeTree(p),
  syncDir: (p) => inner.syncDir(p),
  sizeBytes: (p) => inner.sizeBytes(p),
  rename: async (from: string, to: string) => {
    renames++;
    if (renames > completed) {
      process.send!({ tempWritten: from });
      await new Promise(() => {}); // killed here, between the durable temporary file and the rename
    }
    return inner.rename(from, to);
  },
};

for (let i = 0; ; i++) {
  if (kind === 'users') await UserCredentials.addUser(fs, dir, `user-${i}`, `pw-${i}`);
  else
    await AclSet.add(fs, dir, [
      {
        principal: `User:u${i}`,
        host: '*',
        operation: 'Read',
        permission: 'ALLOW',
        resourceType: 'Group',
        patternType: 'LITERAL',
        name: `g${i}`,
      },
    ]);
  process.send!({ done: i });
}
