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
 * each file: a setup file runs for every test file, where a module's own hooks would not. Before
 * that, a store a file opened and never closed fails the file: its lock stays held in the worker,
 * which the fast tier shares between files.
 */
import { afterAll, afterEach, expect } from 'vitest';
import { directoriesLockedByThisProcess } from '../../src/log/directory-lock.js';
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

/** Stores already reported left open by an earlier file of this worker (this module runs per file). */
const reportedOpen = ((globalThis as { [key: symbol]: Set<string> | undefined })[
  Symbol.for('offset-store.test.reportedOpenStores')
] ??= new Set<string>());

afterEach(() => removeTestTempDirs());
afterAll(() => {
  const open = directoriesLockedByThisProcess().filter((lock) => !reportedOpen.has(lock));
  for (const lock of open) reportedOpen.add(lock);
  removeFileTempDirs();
  expect(open, 'stores this file opened and never closed (their LOCK files)').toEqual([]);
});
