/**
 * Work over a request's array in turns: a request may name up to a million groups (or keys), and a
 * handler that went through them in one run of the event loop would hold every other connection
 * for seconds (one DescribeGroups of a million unknown groups: ~15 s). Past TURN_ITEMS elements the
 * work goes on in turns of TURN_ITEMS, each after the event loop has served what else is waiting
 * (`setImmediate`), so one client's large request costs its own answer time, not everyone's. A
 * small request is worked through at once, as before.
 */

import { nextTurn } from '../../util/index.js';

/** Elements worked through before the event loop serves others. */
export const TURN_ITEMS = 256;

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

/** Turns of `mapAsyncInTurns` whose work may be under way at once. */
export const TURNS_IN_FLIGHT = 8;

/**
 * `Promise.all(items.map(fn))`, TURN_ITEMS at a time, each turn after the event loop served others.
 * A turn does not wait for the work of the turns before it to finish, only for the one TURNS_IN_FLIGHT
 * turns back: the writes of a DeleteGroups of thousands of groups share fdatasyncs (a turn waiting
 * for the one before made one round of them per 256 groups), and no more than TURN_ITEMS *
 * TURNS_IN_FLIGHT of them are pending at once (a log takes a bounded number of pending writes).
 */
export async function mapAsyncInTurns<T, R>(
  items: readonly T[],
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  if (items.length <= TURN_ITEMS) return Promise.all(items.map(fn));
  const out: R[] = new Array<R>(items.length);
  const turns: Promise<void>[] = [];
  for (let start = 0; start < items.length; start += TURN_ITEMS) {
    if (start > 0) await nextTurn();
    if (turns.length >= TURNS_IN_FLIGHT) await turns[turns.length - TURNS_IN_FLIGHT];
    const end = Math.min(items.length, start + TURN_ITEMS);
    const turn = Promise.all(items.slice(start, end).map(fn)).then((done) => {
      for (let i = 0; i < done.length; i++) out[start + i] = done[i]!;
    });
    // A rejection is taken by the Promise.all below; until then it must not count as unhandled.
    turn.catch(() => {});
    turns.push(turn);
  }
  await Promise.all(turns);
  return out;
}
