/**
 * Child of checkpoint-damage.test.ts: opens the store in argv[2] with the checkpoint strategy, prints
 * one JSON line saying what happened (opened: warnings, recovery report, state; or rejected: the
 * error), and closes the store. A damaged checkpoint that crashes LMDB kills this process by a signal,
 * which the parent sees instead of dying itself.
 */
import { OffsetStore } from '../../src/index.js';
import { stateOf } from '../compaction/compaction-fixtures.js';

const dir = process.argv[2]!;
const warnings: string[] = [];
let outcome: unknown;
try {
  const store = await OffsetStore.open({
    dir,
    bucketCount: 1,
    segmentBytesMax: 2048,
    compaction: { strategy: 'checkpoint', intervalMs: 3_600_000 },
    onWarning: (m) => warnings.push(m),
  });
  const state = [...(await stateOf(store))].map(([groupId, offsets]) => [groupId, [...offsets]]);
  outcome = { kind: 'opened', warnings, report: store.recoveryReports()[0], state };
  await store.close();
} catch (error) {
  outcome = {
    kind: 'rejected',
    warnings,
    code: (error as { code?: string }).code,
    message: (error as Error).message,
  };
}
process.stdout.write(`${JSON.stringify(outcome)}\n`);
