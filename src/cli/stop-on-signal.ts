/**
 * For commands that run for a while on stores of their own (`demo`, `lab`): the first SIGINT,
 * SIGTERM or SIGHUP stops the command as Interrupted (`error: stopped by SIGINT: ...`, or the JSON
 * INTERRUPTED line with --json; exit 128 + the signal's number), saying what was left undone,
 * instead of killing the process with nothing said. The process then exits (main.ts) without
 * closing those stores, which their crash recovery covers, as after a kill. The handlers are removed
 * once the work ends or the first signal comes, so that a second signal ends the process at once.
 */
import { constants } from 'node:os';
import { Interrupted } from './command.js';

const STOPPING_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** `work`'s outcome, or Interrupted with `whenStopped` on the first stopping signal. */
export async function stopOnSignal<T>(work: Promise<T>, whenStopped: string): Promise<T> {
  let onSignal: (signal: NodeJS.Signals) => void = () => {};
  const stopped = new Promise<never>((_, reject) => {
    onSignal = (signal) => {
      dispose();
      reject(
        new Interrupted(`stopped by ${signal}: ${whenStopped}`, 128 + constants.signals[signal]),
      );
    };
  });
  const dispose = () => {
    for (const signal of STOPPING_SIGNALS) process.off(signal, onSignal);
  };
  for (const signal of STOPPING_SIGNALS) process.on(signal, onSignal);
  // What the work does after the signal is no longer reported.
  work.catch(() => {});
  try {
    return await Promise.race([work, stopped]);
  } finally {
    dispose();
  }
}
