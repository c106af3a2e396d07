// A strategy whose plan, on a worker thread, leaves a timer that throws while the job still runs:
// an error nothing catches, which ends the thread under its job. On the main thread it plans nothing.
import { isMainThread } from 'node:worker_threads';

export default {
  name: 'late-throw',
  async plan() {
    if (isMainThread) return null;
    setTimeout(() => {
      throw new Error('late boom from a timer');
    }, 0);
    await new Promise((resolve) => setTimeout(resolve, 200));
    return null;
  },
};
