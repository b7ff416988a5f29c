interface Pending<T> {
  entry: T;
  resolve: (accepted: boolean) => void;
  reject: (error: unknown) => void;
}

export interface GroupCommitOptions<T> {
  /** Stores a batch in one store call and answers the keys of the entries it accepted. */
  commit: (entries: readonly T[]) => Promise<ReadonlySet<string>>;
  /** The item an entry is about: one batch never holds two entries for the same item. */
  key: (entry: T) => string;
  maxBatch: number;
  /** Commits in flight at once. */
  maxFlushes: number;
  /** Before a failed commit is tried again, then split in halves. @default 200 */
  retryDelayMs?: number;
}

/**
 * Group commit: callers push an entry and wait; one store call stores everything pushed so far
 * (a settle adds `k` to the counters in one statement), and the next starts as soon as one ends.
 * Under load the batches grow by themselves; when idle an entry goes out on the next tick.
 *
 * A failed commit is tried once more after a pause (a lost connection costs one retry), then split
 * in halves, so that an entry the store cannot take fails alone instead of taking its batch with it. The same item never appears twice in one batch (a later entry waits
 * for the next), so a batch cannot hold a stale and a live outcome of one item side by side.
 */
export class GroupCommit<T> {
  readonly #options: Required<GroupCommitOptions<T>>;
  #queue: Pending<T>[] = [];
  readonly #flushes = new Set<Promise<void>>();
  #scheduled = false;

  constructor(options: GroupCommitOptions<T>) {
    this.#options = { retryDelayMs: 200, ...options };
  }

  /** Resolves true when the entry was stored, false when the store turned it down. */
  push(entry: T): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ entry, resolve, reject });
      this.#schedule();
    });
  }

  /** Resolves once everything pushed so far is committed (or has failed). */
  async idle(): Promise<void> {
    while (this.#flushes.size > 0 || this.#queue.length > 0) {
      this.#schedule();
      // A flush may only be scheduled (it starts on the next tick): wait for that tick then.
      await (this.#flushes.size > 0 ? Promise.race(this.#flushes) : new Promise<void>((resolve) => setImmediate(resolve)));
    }
  }

  #schedule(): void {
    if (this.#scheduled || this.#flushes.size >= this.#options.maxFlushes || this.#queue.length === 0) return;
    this.#scheduled = true;
    // Let the entries of handlers finishing in the same tick join the batch.
    setImmediate(() => {
      this.#scheduled = false;
      if (this.#flushes.size >= this.#options.maxFlushes || this.#queue.length === 0) return;
      const flush: Promise<void> = this.#commit(this.#takeBatch()).finally(() => {
        this.#flushes.delete(flush);
        this.#schedule();
      });
      this.#flushes.add(flush);
      this.#schedule();
    });
  }

  #takeBatch(): Pending<T>[] {
    const batch: Pending<T>[] = [];
    const keys = new Set<string>();
    const rest: Pending<T>[] = [];
    for (const pending of this.#queue) {
      const key = this.#options.key(pending.entry);
      if (batch.length < this.#options.maxBatch && !keys.has(key)) {
        keys.add(key);
        batch.push(pending);
      } else {
        rest.push(pending);
      }
    }
    this.#queue = rest;
    return batch;
  }

  async #commit(batch: Pending<T>[]): Promise<void> {
    let failure = await this.#attempt(batch);
    if (failure === null) return;
    await new Promise((resolve) => setTimeout(resolve, this.#options.retryDelayMs));
    failure = await this.#attempt(batch);
    if (failure !== null) await this.#isolate(batch, failure);
  }

  /**
   * Narrows a failing batch down to the entries the store cannot take. A half that fails is split
   * again only while its other half went through: when both fail, the store itself is failing and
   * every entry is rejected at once instead of being tried one by one.
   */
  async #isolate(batch: Pending<T>[], failure: { error: unknown }): Promise<void> {
    if (batch.length === 1) {
      batch[0]!.reject(failure.error);
      return;
    }
    const half = Math.ceil(batch.length / 2);
    const [first, second] = [batch.slice(0, half), batch.slice(half)];
    const [firstFailure, secondFailure] = [await this.#attempt(first), await this.#attempt(second)];
    if (firstFailure && secondFailure) {
      for (const p of batch) p.reject(secondFailure.error);
      return;
    }
    if (firstFailure) await this.#isolate(first, firstFailure);
    if (secondFailure) await this.#isolate(second, secondFailure);
  }

  /** One store call; its entries are answered when it succeeds. Returns the failure, if any. */
  async #attempt(batch: Pending<T>[]): Promise<{ error: unknown } | null> {
    let accepted: ReadonlySet<string>;
    try {
      accepted = await this.#options.commit(batch.map((p) => p.entry));
    } catch (error) {
      return { error };
    }
    for (const p of batch) p.resolve(accepted.has(this.#options.key(p.entry)));
    return null;
  }
}
