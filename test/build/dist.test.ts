/**
 * The compiled package works, not only the sources under tsx: builds src/ with the project's build
 * config into a scratch folder inside the project (so node_modules resolve), then opens a store
 * through the compiled entry, commits, and compacts — which starts the compiled worker file that the
 * pool resolves next to itself.
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/temp-dir.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const OUT = path.join(ROOT, '.tmp', `dist-test-${process.pid}`);

afterAll(() => rmSync(OUT, { recursive: true, force: true }));

describe('compiled package', () => {
  beforeAll(() => {
    execFileSync(
      process.execPath,
      [
        path.join(ROOT, 'node_modules/typescript/bin/tsc'),
        '-p',
        path.join(ROOT, 'tsconfig.build.json'),
        '--outDir',
        OUT,
      ],
      { cwd: ROOT, stdio: 'pipe' },
    );
  });

  it('loads, commits and compacts on a worker thread from dist', async () => {
    const api = (await import(
      pathToFileURL(path.join(OUT, 'index.js')).href
    )) as typeof import('../../src/index.js');
    const dir = tempDir();
    const store = await api.OffsetStore.open({
      dir,
      bucketCount: 1,
      segmentBytesMax: 1024,
      compaction: { strategy: 'log-cleaner' },
    });
    for (let i = 0; i < 60; i++)
      await store.commitOffsets('g', [{ tableId: 1, bucketId: i % 3, offset: i }]);
    const report = await store.compact();
    expect(report.recordsDropped).toBeGreaterThan(0);
    expect(await store.fetchOffsets('g', [{ tableId: 1, bucketId: 2 }])).toMatchObject([
      { offset: 59 },
    ]);
    await store.close();
  });

  it('loads the etcd client (gRPC) only when a cluster connection is made, not on import', () => {
    // A fresh process: what importing the package root loads, then what a connection adds.
    const script = `
      const { createRequire } = await import('node:module');
      const require = createRequire(import.meta.url);
      const loaded = () => Object.keys(require.cache).filter((k) => /node_modules[\\/](etcd3|@grpc)[\\/]/.test(k)).length;
      const root = await import(${JSON.stringify(pathToFileURL(path.join(OUT, 'index.js')).href)});
      const onImport = loaded();
      const cluster = await import(${JSON.stringify(pathToFileURL(path.join(OUT, 'cluster', 'index.js')).href)});
      const afterClusterImport = loaded();
      const connection = new cluster.EtcdConnection({ endpoints: ['http://127.0.0.1:9'] });
      const afterConnection = loaded();
      connection.close();
      console.log(JSON.stringify({ root: typeof root.startClusterServer, onImport, afterClusterImport, afterConnection }));
    `;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    const seen = JSON.parse(out.trim().split('\n').at(-1)!) as Record<string, unknown>;
    expect(seen).toMatchObject({ root: 'function', onImport: 0, afterClusterImport: 0 });
    expect(seen.afterConnection).toBeGreaterThan(0);
  });
});
