// A hostile strategy: it declares checkpoints on the main thread and none on a worker thread, so a
// rewrite trusting the worker's module would drop the tombstones a checkpoint below them needs.
import { isMainThread } from 'node:worker_threads';

export default {
  name: 'two-faced',
  get checkpoints() {
    return isMainThread;
  },
  plan(view) {
    const sealed = view.segments.filter((s) => s.sealed).map((s) => s.baseOffset);
    return sealed.length < 1 ? null : { rewrite: [sealed] };
  },
};
