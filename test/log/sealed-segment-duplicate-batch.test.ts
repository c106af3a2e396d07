/**
 * A sealed segment holding the same batch twice (a duplicated write, a bad copy) is damage: the open
 * refuses it with CORRUPT_MESSAGE rather than serve the repeated log offset.
 */
import { appendFileSync, readFileSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { loadChecksum } from '../../src/codec/index.js';
import { Log } from '../../src/log/index.js';
import { logOptions, testBatch } from '../support/log-fixtures.js';
import { tempDir } from '../support/temp-dir.js';

beforeAll(() => loadChecksum());

it('refuses a sealed segment that repeats its last batch', async () => {
  const dir = tempDir();
  const { log } = await Log.open(logOptions(dir));
  const written: Buffer[] = [];
  for (let n = 0; n < 120; n++) {
    const batch = testBatch(n);
    await log.append(batch);
    written.push(batch);
  }
  const first = log.segments()[0]!;
  await log.close();
  const segments = readdirSync(dir)
    .filter((f) => f.endsWith('.log'))
    .sort();
  expect(segments.length).toBeGreaterThan(2);
  // The first (sealed) segment's last batch, written again right after it.
  const last = written[first.lastLogOffset]!;
  const file = path.join(dir, segments[0]!);
  expect(readFileSync(file).subarray(-last.length).equals(last)).toBe(true);
  appendFileSync(file, last);
  const opened = Log.open(logOptions(dir), { fromLogOffset: 0, visit: () => {} });
  await expect(opened).rejects.toMatchObject({ code: 'CORRUPT_MESSAGE' });
  await (await opened.catch(() => undefined))?.log.close();
});
