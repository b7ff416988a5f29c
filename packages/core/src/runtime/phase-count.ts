interface Waiter {
  level: number;
  resolve: () => void;
}

/**
 * How many items are in one phase of their work (running, being recorded), and waiting for that
 * number to fall to a level: a counter instead of a set of promises, so that an item costs no
 * promise of its own to be counted, and a wait costs nothing per item.
 */
export class PhaseCount {
  #value = 0;
  #waiters: Waiter[] = [];

  get value(): number {
    return this.#value;
  }

  up(): void {
    this.#value++;
  }

  down(): void {
    this.#value--;
    if (this.#waiters.length === 0) return;
    const waiting: Waiter[] = [];
    for (const waiter of this.#waiters) {
      if (this.#value <= waiter.level) waiter.resolve();
      else waiting.push(waiter);
    }
    this.#waiters = waiting;
  }

  /** Resolves once the count is `level` or less. */
  atMost(level: number): Promise<void> {
    if (this.#value <= level) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ level, resolve }));
  }
}
