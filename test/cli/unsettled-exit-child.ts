/** Awaits a promise nothing settles, with the command line's report of such an exit installed. */
import { reportUnsettledExit } from '../../src/cli/unsettled-exit.js';

reportUnsettledExit(process.stderr);
await new Promise(() => {});
