// Stands in for a strategy whose plan never ends: on a worker thread, offsets-bucket 0's plan loops
// for good (holding its thread, and a core); every other bucket's plans nothing.
import { isMainThread } from 'node:worker_threads';

export default {
  name: 'looping-worker',
  plan(view) {
    if (!isMainThread && view.bucket === 0) for (;;);
    return null;
  },
};
