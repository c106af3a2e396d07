// Stands in for a compaction worker thread that dies after a while (out of memory, a strategy that
// calls process.exit): on a worker thread, each plan takes 300 ms and then ends the thread. Only
// offsets-bucket 1 is due in the background. On the main thread it plans nothing.
import { isMainThread } from 'node:worker_threads';

export default {
  name: 'dying-slowly',
  due: (view) => view.bucket === 1 && view.segments.length > 1,
  async plan() {
    if (isMainThread) return null;
    await new Promise((resolve) => setTimeout(resolve, 300));
    process.exit(9);
  },
};
