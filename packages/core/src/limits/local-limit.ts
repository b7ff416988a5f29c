import { abortError } from './abortable.ts';

interface Waiter {
  resolve: () => void;
  reject: (e: Error) => void;
  signal: AbortSignal | undefined;
  onAbort: () => void;
}

/**
 * Waiters by lane, served in turn: the first waiter of the lane whose turn it is, then that lane
 * goes to the back. Within a lane, first in, first out.
 */
class Lanes {
  /** In turn order (a Map keeps insertion order): the first lane is served next. */
  readonly #lanes = new Map<string, Waiter[]>();
  #length = 0;

  get length(): number {
    return this.#length;
  }

  push(lane: string, waiter: Waiter): void {
    const queue = this.#lanes.get(lane);
    if (queue) queue.push(waiter);
    else this.#lanes.set(lane, [waiter]);
    this.#length++;
  }

  shift(): Waiter | undefined {
    if (this.#length === 0) return undefined;
    const first = this.#lanes.entries().next();
    const [lane, queue] = first.value!;
    const waiter = queue.shift()!;
    // The lane goes to the back; alone, it is already there.
    if (queue.length === 0) this.#lanes.delete(lane);
    else if (this.#lanes.size > 1) {
      this.#lanes.delete(lane);
      this.#lanes.set(lane, queue);
    }
    this.#length--;
    return waiter;
  }

  remove(lane: string, waiter: Waiter): void {
    const queue = this.#lanes.get(lane);
    const index = queue?.indexOf(waiter) ?? -1;
    if (index < 0) return;
    queue!.splice(index, 1);
    if (queue!.length === 0) this.#lanes.delete(lane);
    this.#length--;
  }
}

/**
 * An in-process semaphore: at most `limit` holders at once in this process. Waiters are served
 * first in, first out, or, when they name lanes, the lanes in turn (round robin) and each lane
 * first in, first out. This is the first level of throttling (handlers in memory); for limits
 * across processes use a global limit.
 */
export class LocalLimit {
  #limit: number;
  #active = 0;
  readonly #waiters = new Lanes();
  readonly #roomWaiters = new Set<{ count: number; resolve: () => void }>();

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`limit: must be an integer >= 1, got ${limit}`);
    this.#limit = limit;
  }

  get limit(): number {
    return this.#limit;
  }

  /**
   * Changes the limit. A larger one serves the waiters at once; below the slots held now, the
   * holders keep them and the next waiter is served once they are under the new limit.
   */
  resize(limit: number): void {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`limit: must be an integer >= 1, got ${limit}`);
    this.#limit = limit;
    while (this.#active < this.#limit && this.#waiters.length > 0) {
      const next = this.#waiters.shift()!;
      next.signal?.removeEventListener('abort', next.onAbort);
      this.#active++;
      next.resolve();
    }
    this.#wakeRoomWaiters();
  }

  get active(): number {
    return this.#active;
  }

  get waiting(): number {
    return this.#waiters.length;
  }

  /** Takes a slot when one is free now (as `acquire` would at once); false when none is. */
  tryAcquire(): boolean {
    if (this.#active >= this.limit) return false;
    this.#active++;
    return true;
  }

  /**
   * Takes a slot, waiting for one when none is free. `lane` (for example a task's id): waiters of
   * different lanes take turns, so a lane with many waiters does not hold back one that comes
   * later with a few; without one, every caller shares one lane.
   */
  acquire(signal?: AbortSignal, lane = ''): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortError(signal));
    if (this.#active < this.limit) {
      this.#active++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        signal,
        onAbort: () => {
          this.#waiters.remove(lane, waiter);
          reject(abortError(signal!));
        },
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      this.#waiters.push(lane, waiter);
    });
  }

  /**
   * Waits for one slot (FIFO, like `acquire`), then takes as many more as are free, up to `max` in
   * all; resolves with how many it holds (release each). When the slot it got was the only free
   * one, it first lets the event loop finish its turn: holders that end together (handlers whose
   * waits expire in the same timer phase) free their slots one callback apart, and a caller woken
   * by the first would otherwise take one slot where a moment later it could take them all.
   */
  async acquireSome(max: number, signal?: AbortSignal): Promise<number> {
    await this.acquire(signal);
    let held = 1;
    if (max > 1 && this.#active >= this.limit) await new Promise((resolve) => setImmediate(resolve));
    while (held < max && this.#active < this.limit && this.#waiters.length === 0) {
      this.#active++;
      held++;
    }
    return held;
  }

  /** Resolves once `count` slots (at most the limit) are free at once, without taking them. */
  whenFree(count = 1, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortError(signal));
    const needed = Math.min(Math.max(1, count), this.limit);
    if (this.limit - this.#active >= needed) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.#roomWaiters.delete(waiter);
        reject(abortError(signal!));
      };
      const waiter = {
        count: needed,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#roomWaiters.add(waiter);
    });
  }

  release(): void {
    const next = this.#active <= this.#limit ? this.#waiters.shift() : undefined;
    if (next) {
      next.signal?.removeEventListener('abort', next.onAbort);
      next.resolve(); // the slot passes straight to the next waiter
    } else {
      this.#active--;
      this.#wakeRoomWaiters();
    }
  }

  #wakeRoomWaiters(): void {
    const free = this.#limit - this.#active;
    for (const waiter of this.#roomWaiters) {
      if (free < waiter.count) continue;
      this.#roomWaiters.delete(waiter);
      waiter.resolve();
    }
  }

  async run<T>(fn: () => Promise<T> | T, signal?: AbortSignal): Promise<T> {
    await this.acquire(signal);
    try {
      return await fn();
    } finally {
      this.release();
    }
  }
}
