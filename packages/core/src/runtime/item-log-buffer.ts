import type { FanoutStore, ItemLogEntry } from '../store/types.ts';
import type { Logger } from './logger.ts';
import { errorFields } from './logger.ts';

/** Lines stored per item attempt; a chatty handler cannot fill the table. */
export const MAX_LOG_LINES_PER_ATTEMPT = 500;
const MAX_MESSAGE_CHARS = 4000;
const FLUSH_MS = 250;
const MAX_BATCH = 500;
/** Lines waiting while the store is unreachable; past this the oldest are dropped. */
const MAX_WAITING = 10_000;

/**
 * Stores the lines handlers log (`ctx.log`) in batches, off the item's path: a log write never
 * delays or fails an item. At most `MAX_LOG_LINES_PER_ATTEMPT` lines per attempt are kept (the
 * last one says the rest were not), and long lines are cut.
 */
export class ItemLogBuffer {
  readonly #store: FanoutStore;
  readonly #logger: Logger;
  #waiting: ItemLogEntry[] = [];
  readonly #perAttempt = new Map<string, number>();
  #timer: NodeJS.Timeout | null = null;
  #flushing: Promise<void> | null = null;
  #dropped = 0;

  constructor(store: FanoutStore, logger: Logger) {
    this.#store = store;
    this.#logger = logger;
  }

  add(entry: ItemLogEntry): void {
    const key = `${entry.itemId}:${entry.attempt}`;
    const n = (this.#perAttempt.get(key) ?? 0) + 1;
    this.#perAttempt.set(key, n);
    if (n > MAX_LOG_LINES_PER_ATTEMPT + 1) return;
    const line =
      n > MAX_LOG_LINES_PER_ATTEMPT
        ? { ...entry, message: `(more lines of this attempt were not stored: ${MAX_LOG_LINES_PER_ATTEMPT} is the limit)`, data: undefined }
        : entry.message.length > MAX_MESSAGE_CHARS
          ? { ...entry, message: `${entry.message.slice(0, MAX_MESSAGE_CHARS)}… (cut at ${MAX_MESSAGE_CHARS} characters)` }
          : entry;
    if (this.#waiting.length >= MAX_WAITING) {
      this.#waiting.shift();
      this.#dropped++;
    }
    this.#waiting.push(line);
    if (this.#waiting.length >= MAX_BATCH) void this.flush();
    else this.#timer ??= setTimeout(() => void this.flush(), FLUSH_MS).unref();
  }

  /** The attempt is over: its line count is no longer needed. */
  attemptDone(itemId: string, attempt: number): void {
    this.#perAttempt.delete(`${itemId}:${attempt}`);
  }

  /** Stores what waits (one flush at a time). */
  async flush(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    while (this.#flushing) await this.#flushing;
    if (this.#waiting.length === 0) return;
    const batch = this.#waiting.splice(0, MAX_BATCH);
    this.#flushing = this.#store
      .appendItemLogs(batch)
      .catch((error: unknown) => this.#logger.warn('could not store item log lines; they are only in the live stream', { lines: batch.length, ...errorFields(error) }))
      .finally(() => {
        this.#flushing = null;
      });
    await this.#flushing;
    if (this.#dropped > 0) {
      this.#logger.warn('item log lines dropped while the store was unreachable', { dropped: this.#dropped });
      this.#dropped = 0;
    }
    if (this.#waiting.length > 0) this.#timer ??= setTimeout(() => void this.flush(), FLUSH_MS).unref();
  }

  /** Stores everything still waiting. */
  async drain(): Promise<void> {
    while (this.#waiting.length > 0 || this.#flushing) await this.flush();
  }
}
