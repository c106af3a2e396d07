/**
 * Real system-call faults for tests: a child process run under strace, which makes the system calls
 * it is told fail with the errno it is told (`-e inject=...`), for every file or only for calls on
 * the paths named (`-P`). Linux only; CI installs strace (.ci/run).
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';

/** Whether the strace command runs here. */
export const hasStrace = spawnSync('strace', ['-V']).status === 0;

/** What to make fail: `inject` as strace takes it (e.g. 'pread64:error=EIO'), on `paths` only if given. */
export interface Faults {
  inject: string[];
  paths?: string[];
}

/**
 * Runs `node --import tsx <args>` under strace with `faults`, and returns how it ended (stdout and
 * stderr as text). Each injected system call is traced too (strace injects only into traced calls),
 * with the trace itself thrown away.
 */
export function runTsWithFaults(
  faults: Faults,
  args: string[],
  timeoutMs = 90_000,
): SpawnSyncReturns<string> {
  const traced = [...new Set(faults.inject.flatMap((i) => i.split(':')[0]!.split(',')))];
  return spawnSync(
    'strace',
    [
      '-f',
      '-o',
      '/dev/null',
      ...(faults.paths ?? []).flatMap((p) => ['-P', p]),
      '-e',
      `trace=${traced.join(',')}`,
      ...faults.inject.flatMap((i) => ['-e', `inject=${i}`]),
      process.execPath,
      '--import',
      'tsx',
      ...args,
    ],
    { encoding: 'utf8', timeout: timeoutMs },
  );
}
