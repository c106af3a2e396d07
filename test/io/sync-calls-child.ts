/**
 * Child of sync-calls.test.ts, run under strace with fdatasync or fsync failing on the paths given:
 * in the folder argv[2], writes a file, flushes it on the calling thread (`datasyncNow`), through
 * the thread pool (`datasync`), and fsyncs the folder (`syncDir`); prints one line of JSON with the
 * error code each step ended with ('ok' when none).
 */
import * as path from 'node:path';
import { NodeFileSystem } from '../../src/io/index.js';

const dir = process.argv[2]!;
const fs = new NodeFileSystem();
const handle = await fs.open(path.join(dir, 'f'), 'w');
await handle.writev([Buffer.from('abc')], 0);
const outcome = async (step: () => unknown): Promise<string> => {
  try {
    const done = await step();
    return done === false ? 'declined' : 'ok';
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? String(error);
  }
};
const result = {
  datasyncNow: await outcome(() => handle.datasyncNow!()),
  datasync: await outcome(() => handle.datasync()),
  syncDir: await outcome(() => fs.syncDir(dir)),
};
await handle.close();
process.stdout.write(`${JSON.stringify(result)}\n`);
