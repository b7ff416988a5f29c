/**
 * Settles `work` and measures the longest the event loop was blocked meanwhile (sampled every
 * 10 ms): how a test shows that CPU-heavy work ran off the loop.
 */
export async function loopLagDuring<T>(work: Promise<T>): Promise<{ result: PromiseSettledResult<T>; maxLagMs: number }> {
  let maxLagMs = 0;
  let last = Date.now();
  const timer = setInterval(() => {
    const now = Date.now();
    maxLagMs = Math.max(maxLagMs, now - last - 10);
    last = now;
  }, 10);
  const [result] = await Promise.allSettled([work]);
  clearInterval(timer);
  return { result: result!, maxLagMs };
}
