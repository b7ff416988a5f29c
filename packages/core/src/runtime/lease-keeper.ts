import type { FanoutStore } from '../store/types.ts';

export type AbortWhy = 'task_stopped' | 'claim_lost' | 'shutdown';

interface Held {
  token: string;
  taskId: string;
  abort: (why: AbortWhy) => void;
}

/**
 * Keeps the claims of this process alive and tells running items when to stop. One timer per
 * process: it renews the leases of every held item (so a dead process's items lapse after one
 * lease), and asks which of the tasks it is working on stopped running (cancel, failure
 * tolerance, deadline) so their items see their abort signal, whichever process stopped them.
 */
export class LeaseKeeper {
  readonly #store: FanoutStore;
  readonly #leaseMs: number;
  readonly #pollMs: number;
  readonly #onError: (error: unknown) => void;
  readonly #held = new Map<string, Held>();
  #timer: NodeJS.Timeout | null = null;
  #lastRenewal = 0;
  #ticking = false;

  constructor(store: FanoutStore, options: { leaseMs: number; pollMs: number; onError: (error: unknown) => void }) {
    this.#store = store;
    this.#leaseMs = options.leaseMs;
    this.#pollMs = options.pollMs;
    this.#onError = options.onError;
  }

  track(itemId: string, token: string, taskId: string, abort: (why: AbortWhy) => void): void {
    this.#held.set(itemId, { token, taskId, abort });
    if (!this.#timer) {
      this.#timer = setInterval(() => void this.#tick(), this.#pollMs);
      this.#timer.unref();
    }
  }

  /** Stops renewing the item's lease, if it is still held under this token (not a newer claim). */
  untrack(itemId: string, token: string): void {
    if (this.#held.get(itemId)?.token === token) this.#held.delete(itemId);
    if (this.#held.size === 0 && this.#timer) {
      clearInterval(this.#timer);
      this.#timer = null;
    }
  }

  /** Aborts every item held now (the runtime is shutting down). */
  abortAll(why: AbortWhy): void {
    for (const held of [...this.#held.values()]) held.abort(why);
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  async #tick(): Promise<void> {
    if (this.#ticking || this.#held.size === 0) return;
    this.#ticking = true;
    try {
      const snapshot = [...this.#held.entries()];
      const now = Date.now();
      if (now - this.#lastRenewal >= this.#leaseMs / 3) {
        this.#lastRenewal = now;
        const held = snapshot.map(([itemId, h]) => ({ itemId, token: h.token }));
        const stillHeld = new Set(await this.#store.renewLeases(held, this.#leaseMs));
        for (const [itemId, held] of snapshot) {
          if (!stillHeld.has(itemId) && this.#held.get(itemId) === held) held.abort('claim_lost');
        }
      }
      const taskIds = [...new Set(snapshot.map(([, h]) => h.taskId))];
      const stopped = new Set(await this.#store.stoppedTasks(taskIds));
      if (stopped.size > 0) {
        for (const [itemId, held] of snapshot) {
          if (stopped.has(held.taskId) && this.#held.get(itemId) === held) held.abort('task_stopped');
        }
      }
    } catch (error) {
      this.#onError(error);
    } finally {
      this.#ticking = false;
    }
  }
}
