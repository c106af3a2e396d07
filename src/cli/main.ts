/**
 * Entry point of the `offset-store` command line (`bin/offset-store.js`, `npm start`). The only
 * module that exits the process: it runs the CLI, lets stdout drain, and exits with the CLI's code
 * (explicitly, so that no stray handle can keep a finished command alive).
 */
import { runCli, stopsWhenUnread } from './run-cli.js';
import { reportUnsettledExit } from './unsettled-exit.js';

// A reader that went away (`offset-store log dump ... | head`) is not an error of this command. A
// dump has nothing left to do once nobody reads it, and stops. Any other command goes on without its
// output and exits with its own code: `serve` keeps serving and closes its store cleanly on SIGTERM
// (it used to exit 0 at its next line of output, the store not closed), `log verify | head` still
// exits 1 for a corrupt store, with its error on stderr.
// Any other failure to write it (a full disk, an I/O error) is said once on stderr, and the command
// goes on without its output as above; it then exits 1 if it would have exited 0, since what it
// printed is lost (a script reading `groups list > file` must not take a cut file for the list).
let stdoutGone = false;
let stdoutFailed = false;
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE' || (stdoutGone && error.code === 'ERR_STREAM_DESTROYED')) {
    if (stopsWhenUnread) process.exit(0);
    stdoutGone = true;
    return;
  }
  if (stdoutGone) return;
  stdoutGone = true;
  stdoutFailed = true;
  process.stderr.write(
    `error: writing the output failed (${error.message}); the command goes on without it\n`,
  );
});

// Node exits with 13 when the top-level await below can never settle (nothing left to wake it up):
// say so instead of exiting silently.
reportUnsettledExit(process.stderr);

const exitCode = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
});
if (!stdoutGone) await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
process.exit(stdoutFailed && exitCode === 0 ? 1 : exitCode);
