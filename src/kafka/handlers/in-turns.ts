/**
 * Work over a request's array in turns: a request may name up to a million groups (or keys), and a
 * handler that went through them in one run of the event loop would hold every other connection
 * for seconds (one DescribeGroups of a million unknown groups: ~15 s). Past TURN_ITEMS elements the
 * work goes on in turns of TURN_ITEMS, each after the event loop has served what else is waiting
 * (`setImmediate`), so one client's large request costs its own answer time, not everyone's. A
 * small request is worked through at once, as before.
 */

/** Elements worked through before the event loop serves others. */
export const TURN_ITEMS = 256;

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * `build(items.map(fn))`: at once when there are at most TURN_ITEMS items, else once the map has
 * been worked through in turns (a promise).
 */
export function mapInTurns<T, R, A>(
  items: readonly T[],
  fn: (item: T) => R,
  build: (mapped: R[]) => A,
): A | Promise<A> {
  if (items.length <= TURN_ITEMS) return build(items.map(fn));
  return mapAllInTurns(items, fn).then(build);
}

async function mapAllInTurns<T, R>(items: readonly T[], fn: (item: T) => R): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  for (let start = 0; start < items.length; start += TURN_ITEMS) {
    if (start > 0) await nextTurn();
    const end = Math.min(items.length, start + TURN_ITEMS);
    for (let i = start; i < end; i++) out[i] = fn(items[i]!);
  }
  return out;
}

/** `Promise.all(items.map(fn))`, TURN_ITEMS at a time, each turn after the event loop served others. */
export async function mapAsyncInTurns<T, R>(
  items: readonly T[],
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  if (items.length <= TURN_ITEMS) return Promise.all(items.map(fn));
  const out: R[] = new Array<R>(items.length);
  for (let start = 0; start < items.length; start += TURN_ITEMS) {
    if (start > 0) await nextTurn();
    const end = Math.min(items.length, start + TURN_ITEMS);
    const done = await Promise.all(items.slice(start, end).map(fn));
    for (let i = 0; i < done.length; i++) out[start + i] = done[i]!;
  }
  return out;
}
