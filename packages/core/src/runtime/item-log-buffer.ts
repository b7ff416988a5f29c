import type { FanoutStore, ItemLogEntry } from '../store/types.ts';
import type { Logger } from './logger.ts';
import { errorFields } from './logger.ts';

/** Lines stored per item attempt; a chatty handler cannot fill the table. */
export const MAX_LOG_LINES_PER_ATTEMPT = 500;
const MAX_MESSAGE_CHARS = 4000;
/** A line's data, as JSON, is kept up to this length (then as its start, in `truncated`). */
const MAX_DATA_CHARS = 8000;
const FLUSH_MS = 250;
const MAX_BATCH = 500;
/** Lines waiting while the store is unreachable; past this the oldest are dropped. */
const MAX_WAITING = 10_000;

/**
 * Stores the lines handlers log (`ctx.log`) in batches, off the item's path: a log write never
 * delays or fails an item. At most `MAX_LOG_LINES_PER_ATTEMPT` lines per attempt are kept (the
 * last one says the rest were not), and long lines are cut: the message at `MAX_MESSAGE_CHARS`, the
 * data at `MAX_DATA_CHARS` of JSON. A line the database refuses loses only itself.
 */
export class ItemLogBuffer {
  readonly #store: FanoutStore;
  readonly #logger: Logger;
  #waiting: ItemLogEntry[] = [];
  #timer: NodeJS.Timeout | null = null;
  #flushing: Promise<void> | null = null;
  #dropped = 0;

  constructor(store: FanoutStore, logger: Logger) {
    this.#store = store;
    this.#logger = logger;
  }

  /** Adds the `n`th line of its attempt (counted by the attempt, which may log after it ended). */
  add(entry: ItemLogEntry, n: number): void {
    if (n > MAX_LOG_LINES_PER_ATTEMPT + 1) return;
    const line = n > MAX_LOG_LINES_PER_ATTEMPT ? { ...entry, message: `(more lines of this attempt were not stored: ${MAX_LOG_LINES_PER_ATTEMPT} is the limit)`, data: undefined } : bounded(entry);
    if (this.#waiting.length >= MAX_WAITING) {
      this.#waiting.shift();
      this.#dropped++;
    }
    this.#waiting.push(line);
    if (this.#waiting.length >= MAX_BATCH) void this.flush();
    else this.#timer ??= setTimeout(() => void this.flush(), FLUSH_MS).unref();
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
      .catch((error: unknown) => this.#storeOneByOne(batch, error))
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

  /**
   * A batch the database refused for what a line holds (the store says `invalid_argument`; or
   * PostgreSQL's SQLSTATE class 22, data exceptions, from a store that passes it on) is stored line
   * by line, so one bad line loses only itself; otherwise (the store unreachable) the batch is only
   * in the live stream.
   */
  async #storeOneByOne(batch: ItemLogEntry[], error: unknown): Promise<void> {
    const code = (error as { code?: unknown } | null)?.code;
    const dataRefused = code === 'invalid_argument' || (typeof code === 'string' && /^22[0-9A-Z]{3}$/.test(code));
    if (batch.length === 1 || !dataRefused) {
      this.#logger.warn('could not store item log lines; they are only in the live stream', { lines: batch.length, ...errorFields(error) });
      return;
    }
    let refused = 0;
    let last: unknown = error;
    for (const line of batch) {
      try {
        await this.#store.appendItemLogs([line]);
      } catch (lineError) {
        refused++;
        last = lineError;
      }
    }
    if (refused > 0) this.#logger.warn('could not store some item log lines; they are only in the live stream', { lines: refused, ...errorFields(last) });
  }

  /** Stores everything still waiting. */
  async drain(): Promise<void> {
    while (this.#waiting.length > 0 || this.#flushing) await this.flush();
  }
}

/** The entry with its message and its data's JSON cut to what is stored. */
function bounded(entry: ItemLogEntry): ItemLogEntry {
  let line = entry;
  if (line.message.length > MAX_MESSAGE_CHARS) {
    const end = isHighSurrogate(line.message.charCodeAt(MAX_MESSAGE_CHARS - 1)) ? MAX_MESSAGE_CHARS - 1 : MAX_MESSAGE_CHARS;
    line = { ...line, message: `${line.message.slice(0, end)}… (cut at ${MAX_MESSAGE_CHARS} characters)` };
  }
  if (line.data !== undefined) {
    const json = JSON.stringify(line.data);
    if (json.length > MAX_DATA_CHARS) {
      // Not between the two halves of a surrogate pair (an emoji): half a pair is refused by jsonb.
      const end = isHighSurrogate(json.charCodeAt(MAX_DATA_CHARS - 1)) ? MAX_DATA_CHARS - 1 : MAX_DATA_CHARS;
      line = { ...line, data: { truncated: json.slice(0, end), length: json.length } };
    }
  }
  return line;
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;
