/** The wait before reconnect number `attempt` (0-based): 1 s, 2 s, 4 s, 8 s, then 15 s. */
export function reconnectDelay(attempt: number): number {
  return Math.min(15_000, 1000 * 2 ** Math.max(0, attempt));
}
