/**
 * A service that joins group `scanners` with two members (one static, instance `host-b`), commits,
 * and exits without `leave()` or `close()`, as a process that crashes or is stopped does. It prints
 * `ready` once the group was Stable and the commit durable. Usage: join-and-exit-child.ts <dir>.
 */
import { OffsetStore } from '../../src/index.js';

const [dir] = process.argv.slice(2);
const store = await OffsetStore.open({
  dir: dir!,
  compaction: { strategy: 'none' },
  group: { heartbeatIntervalMs: 50, assignmentIntervalMs: 0 },
});
store.setTableLayout(1, { bucketCount: 4 });
const members = [
  await store.joinGroup('scanners', { subscribedTableIds: [1] }),
  await store.joinGroup('scanners', { subscribedTableIds: [1], instanceId: 'host-b' }),
];
const deadline = Date.now() + 20_000;
while (!(
  (await store.describeGroup('scanners')).state === 'Stable' &&
  members.every((m) => m.assignment.length === 2)
)) {
  if (Date.now() > deadline) throw new Error('the group did not become Stable');
  await new Promise((resolve) => setTimeout(resolve, 20));
}
for (const member of members)
  await member.commit(member.assignment.map((b) => ({ ...b, offset: 100 + b.bucketId })));
process.stdout.write('ready\n');
process.exit(0);
