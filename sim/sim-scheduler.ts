/**
 * Virtual time and the order of everything that happens in a simulation.
 *
 * The store's code is ordinary async JavaScript. It waits on two kinds of things the simulator
 * controls: I/O completions of the simulated file system and timers of the simulated clock. Each is
 * an event here, due at a virtual time (microseconds); `step()` takes the earliest (ties in the
 * order they were scheduled), moves time to it, runs it, and then lets the store run until it is
 * waiting again (`quiesce`). Latencies are drawn from the seed, so the seed decides the order in
 * which I/O completes, and with it every interleaving: one seed, one run.
 *
 * Quiescence: after an event, promise continuations run as microtasks, and any `setImmediate` the
 * store makes runs on the next turn of the real event loop; `quiesce` turns the real event loop
 * until a whole turn passes with nothing new scheduled. The only real work the store awaits outside
 * the simulated ports (LMDB's writer thread for checkpoints, real files it maps) is registered with
 * `trackExternal` and awaited to the end before anything else happens, so it cannot race the
 * simulation either; it is atomic as far as the simulation can tell.
 */
import type { Clock, Timer } from '../src/util/index.js';

interface SimEvent {
  readonly dueUs: number;
  readonly seq: number;
  readonly run: () => void;
  cancelled: boolean;
}

const realSetImmediate = globalThis.setImmediate;
const nextTurn = (): Promise<void> => new Promise((resolve) => realSetImmediate(resolve));

/** A binary heap of events by (dueUs, seq). */
class EventHeap {
  readonly #items: SimEvent[] = [];

  get size(): number {
    return this.#items.length;
  }

  #less(a: SimEvent, b: SimEvent): boolean {
    return a.dueUs < b.dueUs || (a.dueUs === b.dueUs && a.seq < b.seq);
  }

  push(event: SimEvent): void {
    const items = this.#items;
    items.push(event);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#less(items[i]!, items[parent]!)) break;
      [items[i], items[parent]] = [items[parent]!, items[i]!];
      i = parent;
    }
  }

  peek(): SimEvent | undefined {
    return this.#items[0];
  }

  pop(): SimEvent | undefined {
    const items = this.#items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0 && last !== undefined) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < items.length && this.#less(items[l]!, items[m]!)) m = l;
        if (r < items.length && this.#less(items[r]!, items[m]!)) m = r;
        if (m === i) break;
        [items[i], items[m]] = [items[m]!, items[i]!];
        i = m;
      }
    }
    return top;
  }
}

/** The simulation's event queue and virtual time. */
export class SimScheduler {
  /** Virtual time in microseconds since the simulation began. */
  nowUs = 0;
  #seq = 0;
  readonly #events = new EventHeap();
  readonly #external = new Set<Promise<unknown>>();
  /** Events scheduled so far; quiescence watches it. */
  scheduledCount = 0;
  /** Events run so far. */
  steps = 0;
  /** Called after every event, once the store has settled (the simulator samples state there). */
  afterStep: (() => void) | undefined;

  /** Schedules `run` `delayUs` from now; returns a handle to cancel it. */
  schedule(delayUs: number, run: () => void): { cancel(): void } {
    const event: SimEvent = {
      dueUs: this.nowUs + Math.max(0, Math.round(delayUs)),
      seq: this.#seq++,
      run,
      cancelled: false,
    };
    this.#events.push(event);
    this.scheduledCount++;
    return {
      cancel: () => {
        event.cancelled = true;
      },
    };
  }

  /** Registers real work the store awaits outside the simulated ports; quiescence waits for it. */
  trackExternal<T>(work: Promise<T>): Promise<T> {
    this.#external.add(work);
    this.scheduledCount++;
    const forget = () => {
      this.#external.delete(work);
    };
    work.then(forget, forget);
    return work;
  }

  /**
   * Real work the store awaits, handed over deterministically: the store gets a promise that settles
   * as `work` did, in an event of its own scheduled now (so pieces of real work running at the same
   * time reach the store in the order they were started, not in the order they finished). Quiescence
   * waits for `work` to finish before any event runs.
   */
  deterministic<T>(work: Promise<T>): Promise<T> {
    let outcome: { ok: true; value: T } | { ok: false; error: unknown } | undefined;
    this.trackExternal(
      work.then(
        (value) => {
          outcome = { ok: true, value };
        },
        (error: unknown) => {
          outcome = { ok: false, error };
        },
      ),
    );
    return new Promise<T>((resolve, reject) => {
      this.schedule(0, () => {
        if (outcome === undefined)
          throw new Error(
            'simulator: real work handed over before it finished (an event ran without quiescence)',
          );
        if (outcome.ok) resolve(outcome.value);
        else reject(outcome.error);
      });
    });
  }

  /** Whether an event is waiting. */
  get pending(): boolean {
    this.#dropCancelled();
    return this.#events.size > 0;
  }

  /** Due time of the next event, or undefined. */
  nextDueUs(): number | undefined {
    this.#dropCancelled();
    return this.#events.peek()?.dueUs;
  }

  #dropCancelled(): void {
    while (this.#events.peek()?.cancelled === true) this.#events.pop();
  }

  /** Lets the store run until it waits on the simulation again. */
  async quiesce(): Promise<void> {
    let quietTurns = 0;
    while (quietTurns < 2) {
      const before = this.scheduledCount;
      while (this.#external.size > 0) await Promise.allSettled([...this.#external]);
      await nextTurn();
      quietTurns = this.scheduledCount === before && this.#external.size === 0 ? quietTurns + 1 : 0;
    }
  }

  /** Runs the next event (time moves to it) and lets the store settle; false when there is none. */
  async step(): Promise<boolean> {
    this.#dropCancelled();
    const event = this.#events.pop();
    if (event === undefined) return false;
    this.nowUs = Math.max(this.nowUs, event.dueUs);
    this.steps++;
    event.run();
    await this.quiesce();
    this.afterStep?.();
    return true;
  }

  /** Moves time forward by `us`, running every event due meanwhile. */
  async advance(us: number): Promise<void> {
    const targetUs = this.nowUs + us;
    for (;;) {
      const due = this.nextDueUs();
      if (due === undefined || due > targetUs) break;
      await this.step();
    }
    this.nowUs = targetUs;
  }
}

/** The store's clock in a simulation: time is the scheduler's, timers are its events. */
export class SimClock implements Clock {
  readonly #scheduler: SimScheduler;
  readonly #epochMs: number;
  #stopped = false;
  readonly #timers = new Set<{ cancel(): void }>();

  constructor(scheduler: SimScheduler, epochMs: number) {
    this.#scheduler = scheduler;
    this.#epochMs = epochMs;
  }

  nowMs(): number {
    return this.#epochMs + Math.floor(this.#scheduler.nowUs / 1000);
  }

  setTimer(delayMs: number, callback: () => void): Timer {
    if (this.#stopped) return { cancel() {} };
    const handle = this.#scheduler.schedule(Math.max(0, delayMs) * 1000, () => {
      this.#timers.delete(handle);
      if (!this.#stopped) callback();
    });
    this.#timers.add(handle);
    return {
      cancel: () => {
        handle.cancel();
        this.#timers.delete(handle);
      },
    };
  }

  /** The process this clock served is gone: none of its timers fires again. */
  stop(): void {
    this.#stopped = true;
    for (const timer of this.#timers) timer.cancel();
    this.#timers.clear();
  }
}
