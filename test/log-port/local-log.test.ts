/** The LogPort conformance suite against the local segmented log (small segments, so truncation frees whole ones). */
import { Log } from '../../src/log/index.js';
import { logOptions } from '../support/log-fixtures.js';
import { tempDir } from '../support/temp-dir.js';
import { describeLogPort } from './log-port-conformance.js';

describeLogPort('local segmented log', {
  fences: false,
  async create() {
    const options = logOptions(tempDir(), { segmentBytesMax: 2048 });
    const opened: Log[] = [];
    const open = async () => {
      const { log } = await Log.open(options);
      opened.push(log);
      return log;
    };
    const log = await open();
    return {
      log,
      reopen: open,
      cleanup: async () => {
        for (const l of opened) await l.close();
      },
    };
  },
});
