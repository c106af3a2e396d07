/**
 * Node exits with code 13 when a top-level await can never settle (nothing is left to wake it up).
 * The command line says so on stderr instead of exiting silently. Node 20 passes 0 to 'exit'
 * listeners in that case and sets `process.exitCode` to 13, so both are looked at.
 */

/** The message written to stderr when the command stopped with an await that could never settle. */
export const UNSETTLED_EXIT_MESSAGE =
  'internal error: the command stopped before finishing (it awaited something that can never happen)\n';

/** Writes UNSETTLED_EXIT_MESSAGE to `stderr` if the process exits with code 13. */
export function reportUnsettledExit(stderr: { write(text: string): unknown }): void {
  process.on('exit', (code) => {
    if (code === 13 || process.exitCode === 13) stderr.write(UNSETTLED_EXIT_MESSAGE);
  });
}
