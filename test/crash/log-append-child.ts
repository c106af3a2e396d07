/**
 * Crash-test child: appends batches with several concurrent appenders and reports every
 * acknowledged (log offset, batch number) over IPC, until it is killed.
 * argv: dir, first batch number.
 */
import { loadChecksum } from '../../src/codec/index.js';
import { Log } from '../../src/log/index.js';
import { logOptions, testBatch } from '../support/log-fixtures.js';

const [dir, firstArg] = process.argv.slice(2);
await loadChecksum();
const { log } = await Log.open(logOptions(dir!, { segmentBytesMax: 8192 }));
let next = Number(firstArg);
process.send!({ type: 'ready' });
async function appender(): Promise<void> {
  for (;;) {
    const n = next++;
    const logOffset = await log.append(testBatch(n, 1 + (n % 5)));
    process.send!({ type: 'ack', n, logOffset });
  }
}
await Promise.all(Array.from({ length: 8 }, appender));
