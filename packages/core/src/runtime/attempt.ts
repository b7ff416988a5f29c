import type { ItemContext, LimitsAccess } from '../define/define-fanout.ts';
import { FanoutError } from '../errors/errors.ts';
import type { ItemEventBase } from '../events/events.ts';
import type { ClaimedItem } from '../store/types.ts';
import type { RuntimeContext } from './context.ts';
import type { AbortWhy } from './lease-keeper.ts';
import { childLogger, itemFields, redact, redactText, type Logger } from './logger.ts';

/** Why an attempt was stopped before its handler returned. */
export type StopReason = AbortWhy | 'expired';

/**
 * One attempt of one claimed item in this process: how it is stopped (the lease keeper holds it
 * while its lease is renewed) and what its handler is given. The handler's context is made as it
 * is read (its signal, its views of the item and the task, its log functions): most handlers read
 * a few of them, and a process runs thousands of attempts a second.
 */
export class Attempt implements ItemContext {
  readonly claimed: ClaimedItem;
  /** The claim it runs under (the lease keeper's key, with the item id). */
  readonly token: string;
  /** Why it was stopped; null while it may run on. */
  why: StopReason | null = null;
  /** Its handler was still running `graceMs` after the stop and is no longer waited for (`waitFor`). */
  abandoned = false;
  /** What a stop does to the handler being waited for (`waitFor`). */
  #onStop: (() => void) | null = null;
  readonly #ctx: RuntimeContext;
  #controller: AbortController | null = null;
  #base: ItemEventBase | null = null;
  #item: ItemContext['item'] | null = null;
  #task: ItemContext['task'] | null = null;
  #log: ItemContext['log'] | null = null;
  #progress: ItemContext['progress'] | null = null;
  #logger: Logger | null = null;
  /** Lines its handler logged (`ctx.log`), stored ones and others. */
  #logLines = 0;

  constructor(ctx: RuntimeContext, claimed: ClaimedItem, token: string) {
    this.#ctx = ctx;
    this.claimed = claimed;
    this.token = token;
  }

  get taskId(): string {
    return this.claimed.taskId;
  }

  get limits(): LimitsAccess {
    return this.#ctx.limits;
  }

  /** Stops the attempt (the first reason counts): its signal aborts, now or when it is first read. */
  abort(why: StopReason): void {
    if (this.why) return;
    this.why = why;
    this.#controller?.abort(this.#reason());
    this.#onStop?.();
  }

  /**
   * The handler's outcome; but once the attempt is stopped, a handler that has not returned
   * `graceMs` later is no longer waited for: the promise rejects with the stop's reason and
   * `abandoned` is set, while the handler runs on (it ignores its signal: a call without a timeout,
   * a library that takes no signal). Its item is then ended as a stopped one is, so its task does
   * not wait for it for ever; what it returns later is fenced off by the claim token.
   */
  waitFor<T>(handling: Promise<T>, graceMs: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const done = () => {
        clearTimeout(timer);
        this.#onStop = null;
      };
      handling.then(
        (value) => (done(), resolve(value)),
        (error: unknown) => (done(), reject(error)),
      );
      const abandon = () => {
        timer = setTimeout(() => {
          this.#onStop = null;
          this.abandoned = true;
          reject(this.#reason());
        }, graceMs);
        timer.unref?.();
      };
      if (this.why) abandon();
      else this.#onStop = abandon;
    });
  }

  /** Throws what its signal would, when it was stopped. */
  throwIfStopped(): void {
    if (this.why) throw this.#reason();
  }

  #reason(): FanoutError {
    return new FanoutError('aborted', `item ${this.claimed.itemId} aborted: ${this.why}`);
  }

  /** What the item's events carry. */
  get base(): ItemEventBase {
    const c = this.claimed;
    return (this.#base ??= { taskId: c.taskId, itemId: c.itemId, key: c.key, kind: c.kind, tenant: c.tenant, attempt: c.attempt });
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.why) this.#controller.abort(this.#reason());
    }
    return this.#controller.signal;
  }

  get item(): ItemContext['item'] {
    const c = this.claimed;
    return (this.#item ??= { id: c.itemId, key: c.key, taskId: c.taskId, attempt: c.attempt, maxAttempts: c.maxAttempts, round: c.round });
  }

  get task(): ItemContext['task'] {
    return (this.#task ??= { id: this.claimed.taskId, tenant: this.claimed.tenant });
  }

  // The functions are made once and hold the attempt: a handler may take them apart from it.
  get log(): ItemContext['log'] {
    return (this.#log ??= (given, raw) => {
      const ctx = this.#ctx;
      const c = this.claimed;
      // Stored, streamed and written out: credentials in a line are masked on every path.
      const message = redactText(given);
      const data = raw === undefined ? undefined : (redact(raw) as Record<string, unknown>);
      ctx.itemLogs.add({ taskId: c.taskId, itemId: c.itemId, attempt: c.attempt, at: new Date(), message, data }, ++this.#logLines);
      // The item's ids last: a handler's data cannot change which item a line is about.
      ctx.logger.debug(message, { ...data, ...itemFields(c) });
      ctx.events.emit('item.log', data ? { ...this.base, message, data } : { ...this.base, message });
    });
  }

  get progress(): ItemContext['progress'] {
    return (this.#progress ??= (detail) => this.#ctx.events.emit('item.progress', { ...this.base, ...detail }));
  }

  /** Every line the handler logs carries the item's ids. */
  get logger(): Logger {
    return (this.#logger ??= childLogger(this.#ctx.logger, itemFields(this.claimed)));
  }
}
