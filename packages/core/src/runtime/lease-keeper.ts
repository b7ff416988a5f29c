import type { FanoutStore } from '../store/types.ts';

export type AbortWhy = 'task_stopped' | 'claim_lost' | 'shutdown';

/** A claimed item this process holds: the claim it is held under, its task, and how to stop it. */
export interface Held {
  readonly token: string;
  readonly taskId: string;
  abort(why: AbortWhy): void;
}

/**
 * Keeps the claims of this process alive and tells running items when to stop. One timer per
 * process: it renews the leases of every held item (so a dead process's items lapse after one
 * lease), asks which of the tasks it is working on stopped running (cancel, failure tolerance,
 * deadline) so their items see their abort signal, whichever process stopped them, and tells the
 * store which claims it holds nothing under any more (`endClaims`).
 */
export class LeaseKeeper {
  readonly #store: FanoutStore;
  readonly #leaseMs: number;
  readonly #pollMs: number;
  readonly #onError: (error: unknown) => void;
  readonly #held = new Map<string, Held>();
  /** Items held per claim token. */
  readonly #perToken = new Map<string, number>();
  /** Tokens one of whose items' outcome could not be stored: never ended, left to lapse. */
  readonly #dirty = new Set<string>();
  /** Tokens this process holds nothing under any more, for the store to forget. */
  #ended: string[] = [];
  #timer: NodeJS.Timeout | null = null;
  #lastRenewal = 0;
  #ticking = false;

  constructor(store: FanoutStore, options: { leaseMs: number; pollMs: number; onError: (error: unknown) => void }) {
    this.#store = store;
    this.#leaseMs = options.leaseMs;
    this.#pollMs = options.pollMs;
    this.#onError = options.onError;
  }

  track(itemId: string, held: Held): void {
    const before = this.#held.get(itemId);
    // (Held again under a newer claim: what the older one held of it is not known to be stored.)
    if (before) this.#release(before.token, false);
    this.#held.set(itemId, held);
    this.#perToken.set(held.token, (this.#perToken.get(held.token) ?? 0) + 1);
    this.#ensureTimer();
  }

  /**
   * Stops renewing the item's lease, if it is still held under this token (not a newer claim).
   * `stored`: the item's outcome or release was stored, or it is no longer held under the token
   * (lost to another claim); false when storing it failed, so the claim must not be ended.
   */
  untrack(itemId: string, token: string, stored: boolean): void {
    if (this.#held.get(itemId)?.token === token) {
      this.#held.delete(itemId);
      this.#release(token, stored);
    }
    if (this.#held.size === 0 && this.#ended.length === 0 && this.#timer) {
      clearInterval(this.#timer);
      this.#timer = null;
    }
  }

  /**
   * Tells the store now which claims this process holds nothing under (the ones since the last
   * tick); a stopping worker calls it last.
   */
  async flushEnded(): Promise<void> {
    if (this.#ended.length === 0 || !this.#store.endClaims) {
      this.#ended = [];
      return;
    }
    const tokens = this.#ended;
    this.#ended = [];
    await this.#store.endClaims(tokens);
  }

  #release(token: string, stored: boolean): void {
    if (!stored) this.#dirty.add(token);
    const left = (this.#perToken.get(token) ?? 1) - 1;
    if (left > 0) {
      this.#perToken.set(token, left);
      return;
    }
    this.#perToken.delete(token);
    if (this.#dirty.delete(token)) return;
    this.#ended.push(token);
    this.#ensureTimer();
  }

  #ensureTimer(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.#tick(), this.#pollMs);
    this.#timer.unref();
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
    if (this.#ticking) return;
    this.#ticking = true;
    try {
      await this.flushEnded();
      if (this.#held.size === 0) {
        if (this.#timer && this.#ended.length === 0) {
          clearInterval(this.#timer);
          this.#timer = null;
        }
        return;
      }
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
