/**
 * settleAtMost: runs a task per item, at most `limit` at once, taking the items in order, and
 * settles once every task has: for work that must not all start together (buckets recovering at
 * open, last checkpoints at close, each holding descriptors while it runs).
 */

/**
 * Runs `task(item)` for every item of `items`, at most `limit` at a time, each started when an
 * earlier one settles; resolves with every outcome, in the order of the items (a rejected task
 * does not stop the others).
 */
export async function settleAtMost<T, R>(
  items: readonly T[],
  limit: number,
  task: (item: T) => Promise<R>,
): Promise<PromiseSettledResult<R>[]> {
  const results: PromiseSettledResult<R>[] = new Array(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      [results[index]] = await Promise.allSettled([task(items[index]!)]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
