import type { Attributes, ObservableResult } from '@opentelemetry/api';

interface Counted {
  attributes: Attributes;
  value: number;
}

/**
 * Counts by attribute set, kept in memory: an event costs a map lookup and an addition, and the
 * totals are read when a metric reader collects (observable instruments). They are also what the
 * process reports for the console, so both read the same figures.
 */
export class LabeledCounts {
  readonly #entries = new Map<string, Counted>();

  /** Adds `n` under `key`; `attributes` is only built the first time a key is seen. */
  add(key: string, attributes: () => Attributes, n = 1): void {
    let entry = this.#entries.get(key);
    if (!entry) this.#entries.set(key, (entry = { attributes: attributes(), value: 0 }));
    entry.value += n;
  }

  observe(result: ObservableResult): void {
    for (const entry of this.#entries.values()) result.observe(entry.value, entry.attributes);
  }

  /** The sum over the entries whose attributes match `where` (every given attribute equal). */
  sum(where: Attributes = {}): number {
    let total = 0;
    for (const entry of this.#entries.values()) {
      if (Object.entries(where).every(([key, value]) => entry.attributes[key] === value)) total += entry.value;
    }
    return total;
  }

  entries(): { attributes: Attributes; value: number }[] {
    return [...this.#entries.values()].map((e) => ({ attributes: e.attributes, value: e.value }));
  }
}
