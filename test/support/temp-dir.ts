/**
 * Temporary directories for tests, the one place they are made and removed. `tempDir()` belongs to
 * the test that asks for it and is removed after that test; `fileTempDir()` outlives the tests of a
 * file, for fixtures built once in `beforeAll` and copied or read by several tests, and is removed
 * after the file. A directory made by `tempDir()` in `beforeAll` would vanish after the first test,
 * so that is refused.
 *
 * The hooks that remove them are registered by the setup file (test/support/no-stray-warnings.ts),
 * not here: the fast tier shares one module graph per worker, so a hook registered when this module
 * is first imported would belong to the first test file of each worker only, and every later file's
 * directories would stay behind.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { expect } from 'vitest';

const perTest: string[] = [];
const perFile: string[] = [];

function make(prefix: string, owners: string[]): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  owners.push(dir);
  return dir;
}

function remove(dirs: string[]): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** A fresh temporary directory, removed after the current test (call it in a test or `beforeEach`). */
export function tempDir(prefix = 'offset-store-'): string {
  if (expect.getState().currentTestName === undefined) {
    throw new TypeError(
      'tempDir() outside a test is removed after the first test; use fileTempDir() for beforeAll fixtures',
    );
  }
  return make(prefix, perTest);
}

/** A fresh temporary directory, removed after the test file: for fixtures built in `beforeAll`. */
export function fileTempDir(prefix = 'offset-store-'): string {
  return make(prefix, perFile);
}

/** Removes the current test's directories; the setup file calls it after every test. */
export function removeTestTempDirs(): void {
  remove(perTest);
}

/** Removes the current file's directories; the setup file calls it after every file. */
export function removeFileTempDirs(): void {
  remove(perFile);
}
