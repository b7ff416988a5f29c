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
  readonly #onSettled: (result: SettleResult, outcomes: readonly Outcome[]) => void;
  #queue: Pending[] = [];
  #flushing: Promise<void> | null = null;

  constructor(store: FanoutStore, maxBatch: number, onSettled: (result: SettleResult, outcomes: readonly Outcome[]) => void) {
    this.#store = store;
    this.#maxBatch = maxBatch;
    this.#onSettled = onSettled;
  }

  /** Resolves true when the outcome was recorded, false when its claim had been lost. */
  push(outcome: Outcome): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ outcome, resolve, reject });
      if (!this.#flushing) this.#flushing = this.#drain();
    });
  }

  /** Resolves once everything pushed so far is flushed. */
  async idle(): Promise<void> {
    while (this.#flushing) await this.#flushing;
  }

  async #drain(): Promise<void> {
    // Let the outcomes of handlers finishing in the same tick join the first batch.
    await new Promise<void>((resolve) => setImmediate(resolve));
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0, this.#maxBatch);
        const outcomes = batch.map((p) => p.outcome);
        try {
          const result = await this.#store.settleItems(outcomes);
          const settled = new Set(result.settled);
          for (const p of batch) p.resolve(settled.has(p.outcome.itemId));
          this.#onSettled(result, outcomes);
        } catch (error) {
          for (const p of batch) p.reject(error);
        }
      }
    } finally {
      this.#flushing = null;
    }
  }
}
