// Stands in for a compaction worker thread that dies (out of memory, a native abort): planning on a
// worker thread ends the thread. On the main thread it plans nothing.
import { isMainThread } from 'node:worker_threads';

export default {
  name: 'exiting-worker',
  plan(view) {
    if (!isMainThread) process.exit(7);
    return null;
  },
};
