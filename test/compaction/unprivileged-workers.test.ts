/**
 * An unprivileged process cannot take a thread back from SCHED_IDLE (Linux needs CAP_SYS_NICE or an
 * RLIMIT_NICE few systems grant), so on a machine with no idle core an idle worker would never run
 * again. Its compaction workers run at nice 19 instead. Run as root, the test starts the store as
 * the `nobody` uid through util-linux's setpriv; elsewhere it is skipped.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';

const CHILD = path.join(import.meta.dirname, 'unprivileged-child.ts');
const hasSetpriv = spawnSync('setpriv', ['--version'], { stdio: 'ignore' }).status === 0;
const root = process.getuid?.() === 0;

function compactAs(user: 'self' | 'nobody'): unknown {
  const dir = mkdtempSync(path.join(tmpdir(), 'offset-store-unprivileged-'));
  chmodSync(dir, 0o777);
  try {
    const node = [process.execPath, '--import', 'tsx', CHILD, path.join(dir, 'store')];
    const command =
      user === 'self'
        ? node
        : ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', ...node];
    const run = spawnSync(command[0]!, command.slice(1), {
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, HOME: dir },
    });
    expect(run.status, run.stderr).toBe(0);
    return JSON.parse(run.stdout.trim().split('\n').at(-1)!);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('compaction workers of an unprivileged process', () => {
  it.runIf(process.platform === 'linux' && root && hasSetpriv)(
    'run at nice 19, not under SCHED_IDLE, which they could not leave; root keeps SCHED_IDLE',
    () => {
      expect(compactAs('nobody')).toEqual({ workerPriority: 19 });
      expect(compactAs('self')).toEqual({ workerPriority: 'idle' });
    },
  );
});
