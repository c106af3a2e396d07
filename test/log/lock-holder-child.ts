/** Lock-test child: takes the directory lock, reports, and holds it until killed. */
import { NodeFileSystem } from '../../src/io/index.js';
import { DirectoryLock } from '../../src/log/index.js';

const [dir] = process.argv.slice(2);
try {
  await DirectoryLock.acquire(new NodeFileSystem(), dir!);
  process.send!({ type: 'locked' });
  setInterval(() => {}, 1000);
} catch (error) {
  process.send!({ type: 'refused', code: (error as { code?: string }).code });
  process.exit(0);
}
