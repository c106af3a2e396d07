/**
 * Test setup: a store warning (torn tail truncated, checkpoint ignored, background compaction failed)
 * that reaches process.emitWarning is a test that did not listen for it. Tests that provoke one pass
 * `onWarning` and assert on what it received; any other fails the test that emitted it, so the test
 * output carries no expected-warning noise and no warning goes unnoticed.
 *
 * Likewise a file a FaultyFileSystem opened during a test and nobody closed fails that test: a path
 * that fails part-way (a write or an fdatasync refused by the injected faults) must still close what
 * it opened, or a long-lived process on a flaky disk runs out of file descriptors.
 *
 * And the temporary directories of test/support/temp-dir.ts are removed here, after each test and
 * each file: a setup file runs for every test file, where a module's own hooks would not.
 */
import { afterAll, afterEach, expect } from 'vitest';
import { FaultyFileSystem } from './faulty-file-system.js';
import { removeFileTempDirs, removeTestTempDirs } from './temp-dir.js';

const stray: string[] = [];
const emitWarning = process.emitWarning.bind(process);
process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
  const type =
    typeof rest[0] === 'string' ? rest[0] : (rest[0] as { type?: string } | undefined)?.type;
  if (type === 'OffsetStoreWarning') {
    stray.push(String(warning));
    return;
  }
  (emitWarning as (...args: unknown[]) => void)(warning, ...rest);
}) as typeof process.emitWarning;

afterEach(() => {
  const warnings = stray.splice(0);
  expect(warnings, 'store warnings nobody listened for (pass onWarning and assert on it)').toEqual(
    [],
  );
});

afterEach(() => {
  const open = FaultyFileSystem.takeInstances().flatMap((fs) => fs.openFiles);
  expect(open, 'files a test file system opened and nobody closed').toEqual([]);
});

afterEach(() => removeTestTempDirs());
afterAll(() => removeFileTempDirs());
import { heldDirectoriesForDebug } from '../../src/log/directory-lock.js';
import { appendFileSync } from 'node:fs';
afterAll(() => {
  const held = heldDirectoriesForDebug();
  if (held.length > 0)
    appendFileSync('/tmp/leaks.txt', `${expect.getState().testPath} ${held.join(' ')}\n`);
});
