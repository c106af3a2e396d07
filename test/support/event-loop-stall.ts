/**
 * The longest time the event loop was held while `body` ran, for tests of a server running in the
 * test's own process: a timer ticking every 2 ms sees the gaps between its ticks.
 */
export async function longestStallDuring<T>(
  body: () => Promise<T>,
): Promise<{ result: T; longestMs: number }> {
  let last = performance.now();
  let longestMs = 0;
  const ticks = setInterval(() => {
    const now = performance.now();
    longestMs = Math.max(longestMs, now - last);
    last = now;
  }, 2);
  try {
    const result = await body();
    return { result, longestMs };
  } finally {
    clearInterval(ticks);
  }
}
