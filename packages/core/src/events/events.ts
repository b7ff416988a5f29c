import type { ItemError, TaskCounts } from '../store/types.ts';

export interface ItemEventBase {
  taskId: string;
  itemId: string;
  key: string;
  kind: string;
  tenant: string | null;
  attempt: number;
}

export interface TaskEvent extends TaskCounts {
  /** When this process observed it (ms since epoch). */
  at: number;
}

/** Every event a runtime emits, by name. Item and task events are namespaced. */
export interface FanoutEventMap {
  'item.started': ItemEventBase;
  'item.succeeded': ItemEventBase & { result: unknown };
  /** `willRetry`: a transient failure with attempts left; otherwise it is counted as failed. */
  'item.failed': ItemEventBase & { error: ItemError; willRetry: boolean };
  'item.cancelled': ItemEventBase;
  'item.log': ItemEventBase & { message: string; data?: Record<string, unknown> };
  'item.progress': ItemEventBase & { fraction?: number; message?: string };
  /** A task was created (not for a replayed idempotent submit). */
  'task.submitted': TaskEvent;
  'task.progress': TaskEvent;
  'task.completed': TaskEvent;
  'task.failed': TaskEvent;
  'task.cancelled': TaskEvent;
  /** Something went wrong in the background (a maintenance pass, a listener); the runtime carries on. */
  error: { error: unknown; context: string };
}

export type FanoutEventName = keyof FanoutEventMap;
export type EndingEventName = 'task.completed' | 'task.failed' | 'task.cancelled';
/** Takes a task's ending durably (`FanoutEvents.onEnding`). */
export type EndingListener = (type: EndingEventName, event: TaskEvent) => Promise<void>;
export type Listener<K extends FanoutEventName> = (event: FanoutEventMap[K]) => void | Promise<void>;

/**
 * A typed emitter whose listeners cannot hurt the emitter: a listener that throws, or returns a
 * promise that rejects, is reported on `error` (or to `onListenerError`) and the others still run.
 */
export class FanoutEvents {
  readonly #listeners = new Map<FanoutEventName, Set<Listener<any>>>();
  readonly #ending = new Set<EndingListener>();
  readonly #onListenerError: (error: unknown, event: FanoutEventName) => void;

  constructor(onListenerError: (error: unknown, event: FanoutEventName) => void) {
    this.#onListenerError = onListenerError;
  }

  on<K extends FanoutEventName>(event: K, listener: Listener<K>): () => void {
    let set = this.#listeners.get(event);
    if (!set) this.#listeners.set(event, (set = new Set()));
    set.add(listener);
    return () => this.off(event, listener);
  }

  off<K extends FanoutEventName>(event: K, listener: Listener<K>): void {
    this.#listeners.get(event)?.delete(listener);
  }

  listenerCount(event: FanoutEventName): number {
    return this.#listeners.get(event)?.size ?? 0;
  }

  emit<K extends FanoutEventName>(event: K, payload: FanoutEventMap[K]): void {
    const set = this.#listeners.get(event);
    if (!set || set.size === 0) return;
    for (const listener of [...set]) {
      try {
        const returned = listener(payload);
        if (returned && typeof (returned as Promise<void>).catch === 'function') {
          (returned as Promise<void>).catch((error: unknown) => this.#report(error, event));
        }
      } catch (error) {
        this.#report(error, event);
      }
    }
  }

  /**
   * A listener that must take every task ending for the ending to count as announced: a broadcast
   * to other processes, say. It is awaited; when it rejects, the ending is announced again later
   * (by the maintenance loop), so it may see an ending more than once and should be idempotent.
   */
  onEnding(listener: EndingListener): () => void {
    this.#ending.add(listener);
    return () => this.#ending.delete(listener);
  }

  /** Emits an ending to its listeners, then delivers it to the `onEnding` ones; rejects if one of those failed. */
  async deliverEnding(type: EndingEventName, event: TaskEvent): Promise<void> {
    this.emit(type, event);
    const results = await Promise.allSettled([...this.#ending].map(async (listener) => listener(type, event)));
    const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed.length > 0) throw new AggregateError(failed.map((f) => f.reason), `${failed.length} ending listener(s) failed`);
  }

  #report(error: unknown, event: FanoutEventName): void {
    if (event !== 'error' && this.listenerCount('error') > 0) {
      this.emit('error', { error, context: `listener of ${event}` });
    } else {
      this.#onListenerError(error, event);
    }
  }
}
