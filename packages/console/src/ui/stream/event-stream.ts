import type { ConsoleEvent } from '../api/types.ts';
import { reconnectDelay, retryAfterMs } from './backoff.ts';
import { SseParser } from './sse-parser.ts';

export type StreamStatus =
  | { state: 'idle' }
  | { state: 'connecting' }
  | { state: 'live' }
  | { state: 'waiting'; retryAt: number; reason: string };

export interface EventStreamOptions {
  /** The stream's URL for a scope: every task (null) or one task's id. */
  url(scope: string | null): string;
  headers(): Record<string, string>;
  onEvent(event: ConsoleEvent): void;
  onStatus(status: StreamStatus): void;
  /** The server refused the token: the stream stops until opened again. */
  onUnauthorized(): void;
}

/**
 * The page's one live connection: `GET /events` read with fetch (EventSource cannot send the
 * Authorization header). Opening another scope replaces the connection; a dropped connection
 * comes back after 1, 2, 4, 8 then 15 s, resuming after the last event id it saw. A refusal that
 * says when to ask again (`Retry-After`, as a 429 for too many streams does) is waited out, with
 * the server's reason shown.
 */
export class EventStream {
  readonly #options: EventStreamOptions;
  #controller: AbortController | null = null;
  #scope: string | null = null;
  #wake: (() => void) | null = null;

  constructor(options: EventStreamOptions) {
    this.#options = options;
  }

  /** Follows `scope` (a task id, or null for every task), replacing any open connection. */
  open(scope: string | null): void {
    if (this.#controller && this.#scope === scope) return;
    this.close();
    this.#scope = scope;
    const controller = new AbortController();
    this.#controller = controller;
    this.#run(scope, controller.signal).catch((error: unknown) => {
      // #run handles its own failures; reaching here is a bug, worth a trace but not a rejection.
      console.error('@fanout/console: the event stream stopped', error);
    });
  }

  close(): void {
    this.#controller?.abort();
    this.#controller = null;
    this.#wake = null;
    this.#options.onStatus({ state: 'idle' });
  }

  /** Skips the wait before the next reconnect. */
  reconnectNow(): void {
    this.#wake?.();
  }

  async #run(scope: string | null, signal: AbortSignal): Promise<void> {
    let lastId: string | undefined;
    let attempt = 0;
    while (!signal.aborted) {
      this.#options.onStatus({ state: 'connecting' });
      let received = false;
      let reason = 'The live connection ended.';
      let notBefore = 0;
      try {
        const res = await fetch(this.#options.url(scope), {
          headers: { ...this.#options.headers(), accept: 'text/event-stream', ...(lastId ? { 'last-event-id': lastId } : {}) },
          cache: 'no-store',
          signal,
        });
        if (res.status === 401) {
          this.#options.onUnauthorized();
          return;
        }
        if (res.status === 404 && scope !== null && (await apiCode(res)) === 'not_found') {
          // The API says the task it would follow is not there (deleted meanwhile, another
          // tenant's): every task of the tenant instead, as a list page has, rather than the same
          // refusal every few seconds. (Another 404, a proxy's during a deploy, is retried as any
          // refusal.) Opening that task again follows it again.
          scope = null;
          if (this.#controller?.signal === signal) this.#scope = null;
          continue;
        }
        if (!res.ok || !res.body) {
          notBefore = retryAfterMs(res.headers.get('retry-after'), Date.now());
          throw new Error(`The live connection was refused (HTTP ${res.status}${await refusalMessage(res)}).`);
        }
        this.#options.onStatus({ state: 'live' });
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        const parser = new SseParser();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          received = true;
          for (const message of parser.push(value)) this.#dispatch(message.event, message.data);
          if (parser.lastEventId !== undefined) lastId = parser.lastEventId;
        }
      } catch (error) {
        if (signal.aborted) return;
        reason = error instanceof Error && error.message.startsWith('The live') ? error.message : 'The live connection was lost.';
      }
      if (signal.aborted) return;
      // A connection that carried something was healthy: start the backoff over.
      if (received) attempt = 0;
      const delay = Math.max(reconnectDelay(attempt++), notBefore);
      this.#options.onStatus({ state: 'waiting', retryAt: Date.now() + delay, reason });
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, delay);
        function done() {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          resolve();
        }
        signal.addEventListener('abort', done);
        this.#wake = done;
      });
      this.#wake = null;
    }
  }

  #dispatch(name: string, data: string): void {
    let event: ConsoleEvent;
    try {
      event = JSON.parse(data) as ConsoleEvent;
    } catch {
      return; // not an event of the contract
    }
    if (!event || typeof event !== 'object') return;
    // The `event:` line names the type too; the data's own `type` wins when both are there.
    if (typeof event.type !== 'string') (event as { type: string }).type = name;
    try {
      this.#options.onEvent(event);
    } catch (error) {
      console.error('@fanout/console: an event handler failed', error);
    }
  }
}

/** The server's own words for a refusal (`{ error: { message } }`), when it gave any. */
/** The API's error code of a refusal (`{ error: { code } }`), or null for another body (a proxy's page). */
async function apiCode(res: Response): Promise<string | null> {
  try {
    const body = (await res.clone().json()) as { error?: { code?: unknown } };
    return typeof body?.error?.code === 'string' ? body.error.code : null;
  } catch {
    return null;
  }
}

async function refusalMessage(res: Response): Promise<string> {
  try {
    const body = (await res.json()) as { error?: { message?: unknown } };
    const message = body?.error?.message;
    return typeof message === 'string' && message ? `: ${message.length > 200 ? `${message.slice(0, 200)}…` : message}` : '';
  } catch {
    return '';
  }
}
