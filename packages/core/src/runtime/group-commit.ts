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
  /**
   * In a steady stream (a commit ended less than this long ago), how long a batch smaller than
   * `fullBatch` waits for more entries before it goes: fewer, larger commits. An entry after a
   * quiet spell goes at once. @default 0
   */
  lingerMs?: number;
  /** A batch this large goes without lingering. @default maxBatch */
  fullBatch?: number;
}

/**
 * Group commit: callers push an entry and wait; one store call stores everything pushed so far
 * (a settle adds `k` to the counters in one statement), and the next starts as soon as one ends.
 * Under load the batches grow by themselves; when idle an entry goes out on the next tick. With a
 * linger, a small batch in a steady stream also waits a few milliseconds for company: fewer,
 * larger commits for the same entries (`idle()` does not wait for it).
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
  /** When the last commit ended (performance.now()), for the linger. */
  #lastEnded = -Infinity;
  /** The timer of a batch lingering for more entries. */
  #lingering: NodeJS.Timeout | null = null;

  constructor(options: GroupCommitOptions<T>) {
    this.#options = { retryDelayMs: 200, lingerMs: 0, fullBatch: options.maxBatch, ...options };
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
      if (this.#lingering !== null) this.#stopLingering(); // a drain does not wait for more
      this.#schedule();
      // A flush may only be scheduled (it starts on the next tick): wait for that tick then.
      await (this.#flushes.size > 0 ? Promise.race(this.#flushes) : new Promise<void>((resolve) => setImmediate(resolve)));
    }
  }

  #schedule(): void {
    if (this.#lingering !== null && this.#queue.length >= this.#options.fullBatch) this.#stopLingering();
    if (this.#scheduled || this.#flushes.size >= this.#options.maxFlushes || this.#queue.length === 0) return;
    this.#scheduled = true;
    const { lingerMs, fullBatch } = this.#options;
    if (lingerMs > 0 && this.#queue.length < fullBatch && performance.now() - this.#lastEnded < lingerMs) {
      this.#lingering = setTimeout(() => {
        this.#lingering = null;
        this.#flush();
      }, lingerMs);
      return;
    }
    // Let the entries of handlers finishing in the same tick join the batch.
    setImmediate(() => this.#flush());
  }

  /** Ends a linger: its batch goes on the next tick. */
  #stopLingering(): void {
    clearTimeout(this.#lingering!);
    this.#lingering = null;
    setImmediate(() => this.#flush());
  }

  #flush(): void {
    this.#scheduled = false;
    if (this.#flushes.size >= this.#options.maxFlushes || this.#queue.length === 0) return;
    const flush: Promise<void> = this.#commit(this.#takeBatch()).finally(() => {
      this.#lastEnded = performance.now();
      this.#flushes.delete(flush);
      this.#schedule();
    });
    this.#flushes.add(flush);
    this.#schedule();
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
