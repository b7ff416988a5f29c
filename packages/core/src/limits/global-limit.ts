import { randomUUID } from 'node:crypto';
import { FanoutError } from '../errors/errors.ts';
import { assertQueueName } from '../define/names.ts';
import type { FanoutStore } from '../store/types.ts';
import { abortError, delay } from './abortable.ts';

export interface GlobalLimitOptions {
  /** Holders at once across every process sharing the database. */
  limit: number;
  /**
   * A holder's slot is recovered this long after its last renewal if the holder dies (so a
   * killed worker holds up the others this long at most). Live holders renew every third of it.
   * @default the runtime's `worker.limitLeaseMs` (6000)
   */
  leaseMs?: number;
  /** Longest pause between two tries while waiting for a slot. @default 250 */
  maxPollMs?: number;
  /** Called when a holder finds its slot's lease lapsed (it stalled longer than `leaseMs`). */
  onLost?: (name: string) => void;
}

export interface RunOptions {
  signal?: AbortSignal;
}

/** Told when a caller starts and stops waiting for a limit (the runtime counts waits for operators). */
export interface LimitObserver {
  waitStarted(): void;
  waitEnded(waitedMs: number): void;
  /** A span (or anything ended once) around one wait: its length, and its error when it failed. */
  waitSpan?(): { end(waitedMs: number, error?: unknown): void };
  /** A global slot was taken, or given back, by this process. */
  acquired?(): void;
  released?(): void;
}

/** Runs `take` (which waits for a slot) and tells the observer how long it waited. */
async function observed<T>(observer: LimitObserver | undefined, take: () => Promise<T>): Promise<T> {
  if (!observer) return take();
  const started = performance.now();
  observer.waitStarted();
  const span = observer.waitSpan?.();
  let failure: unknown;
  try {
    return await take();
  } catch (error) {
    failure = error;
    throw error;
  } finally {
    const waitedMs = performance.now() - started;
    observer.waitEnded(waitedMs);
    span?.end(waitedMs, failure);
  }
}

function backoff(attempt: number, maxMs: number): number {
  const base = Math.min(maxMs, 5 * 2 ** Math.min(attempt, 10));
  return Math.round(base / 2 + Math.random() * (base / 2));
}

/**
 * A strict concurrency limit shared by every process through Postgres: a table of `limit` slot
 * rows, each held by at most one holder, taken with a conditional `UPDATE ... FOR UPDATE SKIP
 * LOCKED`. Never more holders than `limit`, however the takes race; a dead holder's slot frees
 * when its lease lapses. Use it around an expensive call: `await llm.run(() => callModel())`.
 */
export class GlobalLimit {
  readonly name: string;
  readonly limit: number;
  readonly leaseMs: number;
  readonly #maxPollMs: number;
  readonly #store: FanoutStore;
  readonly #onLost: ((name: string) => void) | undefined;
  readonly #observer: LimitObserver | undefined;

  constructor(store: FanoutStore, name: string, options: GlobalLimitOptions, observer?: LimitObserver) {
    assertQueueName(name, 'limit name');
    if (!Number.isInteger(options.limit) || options.limit < 1) {
      throw new FanoutError('invalid_argument', `limit: must be an integer >= 1, got ${options.limit}`, { field: 'limit' });
    }
    this.#store = store;
    this.name = name;
    this.limit = options.limit;
    this.leaseMs = options.leaseMs ?? 6_000;
    this.#maxPollMs = options.maxPollMs ?? 250;
    this.#onLost = options.onLost;
    this.#observer = observer;
  }

  /** Waits for a slot; returns a release function. Prefer {@link run}. */
  async acquire(options: RunOptions = {}): Promise<{ release: () => Promise<void>; holder: string }> {
    const holder = randomUUID();
    await observed(this.#observer, async () => {
      for (let attempt = 0; ; attempt++) {
        if (options.signal?.aborted) throw abortError(options.signal);
        if (await this.#store.acquireSlot(this.name, this.limit, holder, this.leaseMs)) return;
        await delay(backoff(attempt, this.#maxPollMs), options.signal);
      }
    });
    let released = false;
    this.#observer?.acquired?.();
    // Renew while held, so a long call keeps its slot and a dead process loses it.
    const timer = setInterval(() => {
      this.#store
        .renewSlot(this.name, holder, this.leaseMs)
        .then((held) => {
          // The lease lapsed (the process stalled longer than the lease) and the slot may have
          // a new holder: the limit can be exceeded until this call ends. Say so.
          if (!held && !released) this.#onLost?.(this.name);
        })
        .catch(() => {
          // A failed renewal is retried at the next tick; the lease covers two missed ones.
        });
    }, Math.max(50, Math.floor(this.leaseMs / 3)));
    timer.unref();
    return {
      holder,
      release: async () => {
        if (released) return;
        released = true;
        clearInterval(timer);
        this.#observer?.released?.();
        await this.#store.releaseSlot(this.name, holder);
      },
    };
  }

  async run<T>(fn: () => Promise<T> | T, options: RunOptions = {}): Promise<T> {
    const { release } = await this.acquire(options);
    try {
      return await fn();
    } finally {
      await release();
    }
  }

  /** Holders right now, across all processes. */
  holders(): Promise<number> {
    return this.#store.slotHolders(this.name);
  }
}

export interface RateLimitOptions {
  /** Calls allowed in any window of `intervalMs`. */
  limit: number;
  intervalMs: number;
}

/**
 * A strict rate limit shared by every process: `limit` slot rows, each usable once per
 * `intervalMs`, so no window of `intervalMs` ever sees more than `limit` calls.
 */
export class RateLimit {
  readonly name: string;
  readonly limit: number;
  readonly intervalMs: number;
  readonly #store: FanoutStore;
  readonly #observer: LimitObserver | undefined;

  constructor(store: FanoutStore, name: string, options: RateLimitOptions, observer?: LimitObserver) {
    assertQueueName(name, 'limit name');
    if (!Number.isInteger(options.limit) || options.limit < 1) {
      throw new FanoutError('invalid_argument', `limit: must be an integer >= 1, got ${options.limit}`, { field: 'limit' });
    }
    if (!Number.isInteger(options.intervalMs) || options.intervalMs < 1) {
      throw new FanoutError('invalid_argument', `intervalMs: must be an integer >= 1, got ${options.intervalMs}`, { field: 'intervalMs' });
    }
    this.#store = store;
    this.name = name;
    this.limit = options.limit;
    this.intervalMs = options.intervalMs;
    this.#observer = observer;
  }

  /** Waits until a call is allowed; resolves with the moment (database clock) the slot was taken. */
  async take(options: RunOptions = {}): Promise<Date> {
    return observed(this.#observer, async () => {
      for (;;) {
        if (options.signal?.aborted) throw abortError(options.signal);
        const taken = await this.#store.takeRateSlot(this.name, this.limit, this.intervalMs);
        if ('takenAt' in taken) return taken.takenAt;
        // Wake a little after the slot frees, spread so waiters do not stampede.
        await delay(Math.min(taken.waitMs, this.intervalMs) + Math.random() * 20, options.signal);
      }
    });
  }

  async run<T>(fn: () => Promise<T> | T, options: RunOptions = {}): Promise<T> {
    await this.take(options);
    return fn();
  }
}
