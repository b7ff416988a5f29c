/**
 * Runs `flush` at most once per `intervalMs`, after the first call of `schedule()` in a quiet
 * period: many events in a burst give one render. `cancel()` drops a pending flush.
 */
export function createBatcher(flush: () => void, intervalMs: number): { schedule(): void; cancel(): void } {
  let timer: ReturnType<typeof setTimeout> | null = null;
  let last = -Infinity;
  return {
    schedule() {
      if (timer !== null) return;
      const wait = Math.max(0, last + intervalMs - Date.now());
      timer = setTimeout(() => {
        timer = null;
        last = Date.now();
        flush();
      }, wait);
    },
    cancel() {
      if (timer !== null) clearTimeout(timer);
      timer = null;
    },
  };
}
