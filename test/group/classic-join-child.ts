/**
 * A script whose only pending work is one awaited classic JoinGroup (the join phase waits on the
 * store's unref'd timers), then a follower-less SyncGroup; it prints `joined` and `closed`. Node must
 * not exit under it (code 13, an unsettled top-level await). Usage: classic-join-child.ts <dir>.
 */
import { OffsetStore } from '../../src/index.js';

const [dir] = process.argv.slice(2);
const store = await OffsetStore.open({
  dir: dir!,
  compaction: { strategy: 'none' },
  group: { initialRebalanceDelayMs: 200 },
});
const joined = await store.classic.joinGroup('g', {
  protocolType: 'consumer',
  protocols: [{ name: 'range', metadata: new Uint8Array() }],
  sessionTimeoutMs: 10_000,
});
process.stdout.write(`joined ${joined.outcome}\n`);
await store.close();
process.stdout.write('closed\n');
