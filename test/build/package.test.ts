/**
 * The package as a user installs it: `npm pack` on a copy of the project's files (as a clean clone
 * has them: the build runs in prepack), the tarball unpacked into a consumer's node_modules, then
 * used from ESM (`import`), from CommonJS (`require`, which Node 20 gives ESM packages behind
 * --experimental-require-module and Node 22.12+ without a flag), and through its bin with plain
 * node (no tsx). The shipped source maps carry their sources.
 */
import { execFileSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/temp-dir.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** Copies the files a clean clone holds (tracked, plus new files not ignored) into `to`. */
function copyProjectFiles(to: string): void {
  const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((f) => f.length > 0);
  for (const file of files) {
    if (!existsSync(path.join(ROOT, file))) continue;
    mkdirSync(path.dirname(path.join(to, file)), { recursive: true });
    cpSync(path.join(ROOT, file), path.join(to, file));
  }
}

/** A consumer project in `scratch` whose node_modules holds the unpacked package and the project's dependencies. */
function consumerWith(scratch: string, tarball: string): string {
  const consumer = path.join(scratch, 'consumer');
  const modules = path.join(consumer, 'node_modules');
  mkdirSync(modules, { recursive: true });
  // Its own package.json: without one, 'offset-store' would resolve to this project itself.
  writeFileSync(
    path.join(consumer, 'package.json'),
    JSON.stringify({ name: 'consumer', private: true }),
  );
  for (const entry of readdirSync(path.join(ROOT, 'node_modules'))) {
    if (entry === 'offset-store' || entry === '.bin') continue;
    symlinkSync(path.join(ROOT, 'node_modules', entry), path.join(modules, entry));
  }
  mkdirSync(path.join(modules, 'offset-store'));
  execFileSync('tar', [
    '-xzf',
    tarball,
    '-C',
    path.join(modules, 'offset-store'),
    '--strip-components=1',
  ]);
  return consumer;
}

const USE = (load: string) => `
${load}
const dir = process.argv[1];
const store = await OffsetStore.open({ dir, bucketCount: 2 });
await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 42 }]);
const [fetched] = await store.fetchOffsets('g', [{ tableId: 1, bucketId: 0 }]);
await store.close();
process.stdout.write(String(fetched.offset));
`;

describe('the packed package', () => {
  it('packs with its build, and works from ESM, from CommonJS and through its bin with plain node', async () => {
    const scratch = tempDir('offset-store-package-');
    const project = path.join(scratch, 'project');
    copyProjectFiles(project);
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(project, 'node_modules'));
    expect(existsSync(path.join(project, 'dist'))).toBe(false);
    const [packed] = JSON.parse(
      execFileSync('npm', ['pack', '--json', '--pack-destination', scratch], {
        cwd: project,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    ) as { filename: string; files: { path: string }[] }[];
    const shipped = packed!.files.map((f) => f.path);
    expect(shipped).toEqual(
      expect.arrayContaining([
        'LICENSE',
        'README.md',
        'package.json',
        'bin/offset-store.js',
        'dist/index.js',
        'dist/index.d.ts',
        'dist/cli/main.js',
        'dist/compaction/compaction-worker.js',
        'docs/recovery.md',
      ]),
    );
    expect(shipped.some((f) => f.startsWith('src/') || f.startsWith('test/'))).toBe(false);
    const consumer = consumerWith(scratch, path.join(scratch, packed!.filename));
    const installed = path.join(consumer, 'node_modules', 'offset-store');

    const esm = execFileSync(
      process.execPath,
      ['--input-type=module', '-e', USE("import { OffsetStore } from 'offset-store';"), tempDir()],
      { cwd: consumer, encoding: 'utf8' },
    );
    expect(esm).toBe('42');
    const requireFlag =
      Number(process.versions.node.split('.')[0]) < 22
        ? ['--experimental-require-module', '--no-warnings']
        : [];
    const cjs = execFileSync(
      process.execPath,
      [
        ...requireFlag,
        '-e',
        `(async () => { ${USE("const { OffsetStore } = require('offset-store');")} })()`,
        tempDir(),
      ],
      { cwd: consumer, encoding: 'utf8' },
    );
    expect(cjs).toBe('42');

    const dir = tempDir();
    execFileSync(
      process.execPath,
      ['--input-type=module', '-e', USE("import { OffsetStore } from 'offset-store';"), dir],
      { cwd: consumer },
    );
    const bin = path.join(installed, 'bin', 'offset-store.js');
    const listed = execFileSync(process.execPath, [bin, 'groups', 'list', '--dir', dir, '--json'], {
      cwd: consumer,
      encoding: 'utf8',
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    expect(JSON.parse(listed)).toMatchObject({ groups: [{ groupId: 'g' }] });
    const version = execFileSync(process.execPath, [bin, '--version'], {
      cwd: consumer,
      encoding: 'utf8',
    });
    expect(version.trim()).toBe(
      JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version,
    );

    const map = JSON.parse(readFileSync(path.join(installed, 'dist', 'store.js.map'), 'utf8')) as {
      sourcesContent?: string[];
    };
    expect(map.sourcesContent?.[0]).toContain('class OffsetStore');

    // Its declarations type-check in a consumer with the strictest settings (its own .d.ts files
    // checked too: no skipLibCheck), and the example strategy the docs point to is shipped.
    writeFileSync(
      path.join(consumer, 'use.ts'),
      "import { OffsetStore, startKafkaServer } from 'offset-store';\nexport const used = [OffsetStore, startKafkaServer];\n",
    );
    execFileSync(
      process.execPath,
      [
        path.join(ROOT, 'node_modules/typescript/bin/tsc'),
        '--noEmit',
        '--strict',
        '--exactOptionalPropertyTypes',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        '--target',
        'es2022',
        '--types',
        'node',
        'use.ts',
      ],
      { cwd: consumer, encoding: 'utf8' },
    );
    expect(shipped).toContain('examples/compaction/cost-benefit.mjs');
    expect(shipped).toContain('examples/kafka/kafkajs.mjs');
  }, 180_000);
});
