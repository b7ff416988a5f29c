import type { Context } from 'hono';

export interface FailedAttemptsOptions {
  /** Refused tokens one client may present per window before it is refused outright (429). @default 30 */
  limit?: number;
  /** @default 60000 */
  windowMs?: number;
  /** Clients remembered at once; past it the oldest are forgotten. @default 10000 */
  maxClients?: number;
  /** Reverse proxies of your own in front of the server, whose `X-Forwarded-For` is trusted (see `clientAddress`). @default 0 */
  proxyHops?: number;
}

interface Window {
  failures: number;
  resetAt: number;
}

/**
 * Counts refused tokens per client address in fixed windows. A client past the limit is refused
 * every request (a valid token too, or guessing would go on) until its window ends. Counts are
 * kept in this process: behind several API processes a client gets the limit on each.
 */
export class FailedAttempts {
  readonly limit: number;
  readonly windowMs: number;
  readonly proxyHops: number;
  readonly #maxClients: number;
  readonly #clients = new Map<string, Window>();

  constructor(options: FailedAttemptsOptions = {}) {
    this.limit = options.limit ?? 30;
    this.windowMs = options.windowMs ?? 60_000;
    this.#maxClients = options.maxClients ?? 10_000;
    this.proxyHops = options.proxyHops ?? 0;
  }

  /** Seconds until `client` may try again, or 0 when it may now. */
  blockedFor(client: string, now = Date.now()): number {
    const window = this.#clients.get(client);
    if (!window) return 0;
    if (window.resetAt <= now) {
      this.#clients.delete(client);
      return 0;
    }
    return window.failures >= this.limit ? Math.ceil((window.resetAt - now) / 1000) : 0;
  }

  /** Records a refused token of `client`. */
  fail(client: string, now = Date.now()): void {
    let window = this.#clients.get(client);
    if (!window || window.resetAt <= now) {
      this.#clients.delete(client);
      window = { failures: 0, resetAt: now + this.windowMs };
      if (this.#clients.size >= this.#maxClients) this.#forget(now);
      this.#clients.set(client, window);
    }
    window.failures++;
  }

  #forget(now: number): void {
    for (const [client, window] of this.#clients) if (window.resetAt <= now) this.#clients.delete(client);
    // Still full: the oldest windows go (insertion order is age order).
    while (this.#clients.size >= this.#maxClients) this.#clients.delete(this.#clients.keys().next().value!);
  }
}

/**
 * The client's address: the connection's (`@hono/node-server`), or `unknown` for in-process
 * requests. Behind `proxyHops` reverse proxies of your own, the address the outermost of them
 * saw, read from the right of `X-Forwarded-For` (what a client writes there itself is further
 * left, and ignored). @param proxyHops default 0: `X-Forwarded-For` is not trusted at all.
 */
export function clientAddress(c: Context, proxyHops = 0): string {
  const incoming = (c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming;
  const socket = incoming?.socket?.remoteAddress ?? 'unknown';
  if (proxyHops <= 0) return socket;
  const forwarded = (c.req.header('x-forwarded-for') ?? '')
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean)
    .reverse();
  const chain = [socket, ...forwarded];
  return chain[Math.min(proxyHops, chain.length - 1)]!;
}
