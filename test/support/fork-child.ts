import { fork, type ChildProcess } from 'node:child_process';

/** Forks a TypeScript child script through tsx, with an IPC channel. */
export function forkTs(script: string, args: string[]): ChildProcess {
  return fork(script, args, {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

/** Resolves when the child exits (or has already exited). */
export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}
