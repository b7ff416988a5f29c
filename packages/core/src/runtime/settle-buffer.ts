import type { FanoutStore, Outcome, SettleResult } from '../store/types.ts';

interface Pending {
  outcome: Outcome;
  resolve: (settled: boolean) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit for item outcomes. Children push their outcome and wait; one flush at a time
 * settles everything pushed so far in a single store transaction (counter `+= k`), and the
 * next flush starts as soon as the previous one ends. Under load the batches grow by
 * themselves; when idle an outcome is flushed on the next tick, so latency stays low.
 */
export class SettleBuffer {
  readonly #store: FanoutStore;
  readonly #maxBatch: number;
  readonly #maxFlushes: number;
  readonly #onSettled: (result: SettleResult, outcomes: readonly Outcome[]) => void;
  #queue: Pending[] = [];
  readonly #flushes = new Set<Promise<void>>();
  #scheduled = false;
  #flushing = 0;

  constructor(
    store: FanoutStore,
    options: {
      maxBatch: number;
      /** Flushes in flight at once: they overlap everything but the task row update. */
      maxFlushes: number;
      onSettled: (result: SettleResult, outcomes: readonly Outcome[]) => void;
    },
  ) {
    this.#store = store;
    this.#maxBatch = options.maxBatch;
    this.#maxFlushes = options.maxFlushes;
    this.#onSettled = options.onSettled;
  }

  /** Resolves true when the outcome was recorded, false when its claim had been lost. */
  push(outcome: Outcome): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ outcome, resolve, reject });
      this.#schedule();
    });
  }

  /** Outcomes pushed and not yet stored. */
  get pending(): number {
    return this.#queue.length + this.#flushing;
  }

  /** Resolves once at most `limit` outcomes wait to be stored. */
  async below(limit: number): Promise<void> {
    while (this.pending > limit) await this.#progress();
  }

  /** Resolves once everything pushed so far is flushed. */
  async idle(): Promise<void> {
    while (this.#flushes.size > 0 || this.#queue.length > 0) await this.#progress();
  }

  /** Waits for a flush to end; a flush may only be scheduled (it starts on the next tick). */
  async #progress(): Promise<void> {
    this.#schedule();
    await (this.#flushes.size > 0 ? Promise.race(this.#flushes) : new Promise<void>((resolve) => setImmediate(resolve)));
  }

  #schedule(): void {
    if (this.#scheduled || this.#flushes.size >= this.#maxFlushes || this.#queue.length === 0) return;
    this.#scheduled = true;
    // Let the outcomes of handlers finishing in the same tick join the batch.
    setImmediate(() => {
      this.#scheduled = false;
      if (this.#flushes.size >= this.#maxFlushes || this.#queue.length === 0) return;
      const flush: Promise<void> = this.#flush(this.#queue.splice(0, this.#maxBatch)).finally(() => {
        this.#flushes.delete(flush);
        this.#schedule();
      });
      this.#flushes.add(flush);
      this.#schedule();
    });
  }

  async #flush(batch: Pending[]): Promise<void> {
    const outcomes = batch.map((p) => p.outcome);
    this.#flushing += batch.length;
    try {
      const result = await this.#store.settleItems(outcomes);
      const settled = new Set(result.settled);
      for (const p of batch) p.resolve(settled.has(p.outcome.itemId));
      this.#onSettled(result, outcomes);
    } catch (error) {
      for (const p of batch) p.reject(error);
    } finally {
      this.#flushing -= batch.length;
    }
  }
}
