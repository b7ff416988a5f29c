/** The wait before reconnect number `attempt` (0-based): 1 s, 2 s, 4 s, 8 s, then 15 s. */
export function reconnectDelay(attempt: number): number {
  return Math.min(15_000, 1000 * 2 ** Math.max(0, attempt));
}

/** The longest a server's `Retry-After` is followed before asking again anyway. */
const MAX_RETRY_AFTER_MS = 5 * 60_000;

/**
 * The wait a `Retry-After` header asks for, in ms (seconds or an HTTP date, per RFC 9110), at
 * most 5 minutes; 0 when there is none or it cannot be read.
 */
export function retryAfterMs(header: string | null, now: number): number {
  if (!header) return 0;
  const value = header.trim();
  const ms = /^\d+$/.test(value) ? Number(value) * 1000 : Date.parse(value) - now;
  return Number.isFinite(ms) && ms > 0 ? Math.min(ms, MAX_RETRY_AFTER_MS) : 0;
}
