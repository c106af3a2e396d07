/**
 * The README's kafkajs example is examples/kafka/kafkajs.mjs, and it runs: a child process runs the
 * file with its `offset-store` import pointed at this checkout's source (the package's exports name
 * the build) and kafkajs from this checkout's dependencies, and prints what the README says it prints; its store then holds the commit.
 */
import { execFile } from 'node:child_process';
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { OffsetStore } from '../../../src/index.js';
import { tempDir } from '../../support/temp-dir.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const EXAMPLE = path.join(ROOT, 'examples', 'kafka', 'kafkajs.mjs');

describe("the README's kafkajs example", () => {
  it('is the code the README shows', () => {
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const block = /<!-- example: examples\/kafka\/kafkajs\.mjs -->\n```js\n([\s\S]*?)```/.exec(
      readme,
    )?.[1];
    expect(block).toBe(readFileSync(EXAMPLE, 'utf8'));
  });

  it('joins its group, commits, and prints what the README says', async () => {
    const source = readFileSync(EXAMPLE, 'utf8');
    expect(source).toContain("from 'offset-store';");
    const scratch = tempDir();
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(scratch, 'node_modules')); // kafkajs
    const script = path.join(scratch, 'kafkajs-example.mts');
    writeFileSync(
      script,
      source.replace("from 'offset-store';", `from '${path.join(ROOT, 'src', 'index.ts')}';`),
    );
    const dir = tempDir();
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', script, dir],
      { cwd: ROOT, encoding: 'utf8', timeout: 50_000 },
    );
    expect(stdout.split('\n').slice(0, 3)).toEqual([
      'joined billing: orders partitions 0,1,2',
      'committed: orders 0=42 1=-1 2=-1',
      'groups: billing (consumer)',
    ]);
    const store = await OffsetStore.open({ dir });
    try {
      expect((await store.listGroups()).map((g) => g.groupId)).toEqual(['billing']);
      expect(await store.fetchOffsets('billing')).toMatchObject([{ bucketId: 0, offset: 42 }]);
    } finally {
      await store.close();
    }
  });
});
