import { maskedLogger, type Logger } from '@fanout/core';
import pg from 'pg';
import { liveCounts } from './telemetry.ts';
import { assertChannel, isStateEvent, isTerminalEvent, MAX_NOTIFY_BYTES, taskEventSchema, type TaskEvent, type TaskStateEvent, type Wire } from './events.ts';

export interface PublisherOptions {
  /** A pool for the NOTIFYs (never the business transaction's connection), or a URL to make one. */
  pool?: pg.Pool;
  connectionString?: string;
  /** @default 'fanout_events' */
  channel?: string;
  /** At most one progress notification per task per this many ms from this process. @default 100 */
  coalesceMs?: number;
  logger?: Logger;
}

interface Pending {
  latest: TaskStateEvent | null;
  timer: NodeJS.Timeout | null;
}

const MAX_BACKLOG = 10_000;
/** Events in one NOTIFY statement at most (each payload is under 8 KB). */
const MAX_BATCH = 200;

interface Outgoing {
  event: TaskEvent;
  /** Settled once the event is sent (`deliver`); without it a failure is logged. */
  sent?: PromiseWithResolvers<void>;
}

const settledOf = (e: TaskStateEvent) => e.counts.succeeded + e.counts.failed + e.counts.cancelled;

const STATUS_RANK: Record<TaskStateEvent['counts']['status'], number> = {
  queued: 0,
  running: 1,
  stopping: 2,
  completed: 3,
  failed: 3,
  cancelled: 3,
};

/**
 * True when `a` says more than `b` about the task: a later round, the ending of the round, or
 * more items settled, more dispatched or a later status within it. Nothing is newer than the
 * ending of the same round.
 */
export function isNewerState(a: TaskStateEvent, b: TaskStateEvent): boolean {
  if (a.counts.round !== b.counts.round) return a.counts.round > b.counts.round;
  if (isTerminalEvent(b)) return false;
  if (isTerminalEvent(a)) return true;
  if (settledOf(a) !== settledOf(b)) return settledOf(a) > settledOf(b);
  if (a.counts.total !== b.counts.total) return a.counts.total > b.counts.total;
  return STATUS_RANK[a.counts.status] > STATUS_RANK[b.counts.status];
}

/**
 * Sends task events to every server instance with `pg_notify`: parameters only, on a connection
 * of its own, after the business write committed, so a failed broadcast can never roll back or
 * lose it. Progress is coalesced per task (the latest counts always win); terminal events are
 * sent at once and never dropped. A payload too large for a NOTIFY is stored and the
 * notification carries its id. The events published while a NOTIFY is on its way go together in
 * the next one statement (group commit, in order): one transaction per batch instead of one per
 * event, committed without waiting for the disk (a notification is not durable anyway: a
 * listener that missed some catches up from the database).
 */
export class TaskEventPublisher implements AsyncDisposable {
  readonly channel: string;
  readonly #pool: pg.Pool;
  readonly #ownsPool: boolean;
  readonly #coalesceMs: number;
  readonly #logger: Logger | undefined;
  readonly #pending = new Map<string, Pending>();
  /** Events waiting for the next NOTIFY statement, in the order they were published. */
  #outgoing: Outgoing[] = [];
  /** The loop sending `#outgoing`, while it runs. */
  #sending: Promise<void> | null = null;
  #dropped = 0;
  /** The number the next notification carries (see `Wire`). */
  #numbered = 0;
  // Rounds whose ending was sent, per task: progress of that round arriving late (settles finish
  // out of order) is stale and dropped.
  readonly #ended = new Map<string, number>();
  #sent = 0;

  constructor(options: PublisherOptions) {
    this.channel = assertChannel(options.channel ?? 'fanout_events');
    if (options.pool) {
      this.#pool = options.pool;
      this.#ownsPool = false;
    } else if (options.connectionString) {
      this.#pool = new pg.Pool({
        connectionString: options.connectionString,
        max: 2,
        application_name: 'fanout-publisher',
        // A hung broadcast must not hold the queue behind it for ever.
        query_timeout: 10_000,
        connectionTimeoutMillis: 10_000,
      });
      this.#pool.on('error', (error) => this.#logger?.warn('publisher connection failed', { error: error.message }));
      this.#ownsPool = true;
    } else {
      throw new Error('publisher: pass a pool or a connectionString');
    }
    this.#coalesceMs = options.coalesceMs ?? 100;
    this.#logger = options.logger && maskedLogger(options.logger);
  }

  /** Notifications sent so far by this publisher. */
  get sent(): number {
    return this.#sent;
  }

  /** Queues an event. Never throws: a broadcast failure is logged, never passed on. */
  publish(input: TaskEvent): void {
    const parsed = taskEventSchema.safeParse(input);
    if (!parsed.success) {
      this.#logger?.error('refusing to publish a malformed task event', { error: parsed.error.message });
      return;
    }
    const event = parsed.data;
    if (!isStateEvent(event)) {
      this.#send(event);
      return;
    }
    if ((this.#ended.get(event.taskId) ?? 0) >= event.counts.round && !isTerminalEvent(event)) return;
    let pending = this.#pending.get(event.taskId);
    if (!pending) this.#pending.set(event.taskId, (pending = { latest: null, timer: null }));
    if (isTerminalEvent(event)) {
      // The ending carries the final counts: whatever progress was waiting is superseded.
      if (pending.timer) clearTimeout(pending.timer);
      this.#pending.delete(event.taskId);
      if (this.#ended.size >= 10_000) this.#ended.clear();
      this.#ended.set(event.taskId, event.counts.round);
      this.#send(event);
      return;
    }
    if (pending.latest && !isNewerState(event, pending.latest)) return;
    pending.latest = event;
    if (pending.timer) return; // within the window: the trailing send takes the latest
    this.#flushTask(event.taskId);
  }

  #flushTask(taskId: string): void {
    const pending = this.#pending.get(taskId);
    if (!pending?.latest) {
      this.#pending.delete(taskId);
      return;
    }
    const event = pending.latest;
    pending.latest = null;
    this.#send(event);
    pending.timer = setTimeout(() => {
      pending.timer = null;
      this.#flushTask(taskId);
    }, this.#coalesceMs);
    pending.timer.unref();
  }

  #send(event: TaskEvent): void {
    // While the database is unreachable the backlog is bounded: logs and progress past the cap are
    // dropped (a later state supersedes them); endings are always kept.
    if (this.#outgoing.length >= MAX_BACKLOG && !isTerminalEvent(event)) {
      this.#dropped++;
      // A broadcast that will never go out: counted with the failed ones (`fanout.notify.failures`).
      liveCounts.notifyFailures++;
      if (this.#dropped === 1 || this.#dropped % 1000 === 0) this.#logger?.warn('task event backlog full; dropping events', { dropped: this.#dropped });
      return;
    }
    this.#queue({ event });
  }

  #queue(outgoing: Outgoing): void {
    this.#outgoing.push(outgoing);
    this.#sending ??= this.#sendAll();
  }

  // One statement at a time, so listeners get a process's events in the order it published them
  // (a live log reads top to bottom); what queued meanwhile goes in the next. The loop is marked
  // ended in the same turn as it finds nothing left, so an event queued after it starts another.
  async #sendAll(): Promise<void> {
    try {
      while (this.#outgoing.length > 0) {
        const batch = this.#outgoing.splice(0, MAX_BATCH);
        const ready: Array<{ outgoing: Outgoing; payload: string }> = [];
        for (const outgoing of batch) {
          try {
            ready.push({ outgoing, payload: await this.#payload(outgoing.event) });
          } catch (error) {
            // (A payload too large for a NOTIFY that its table refused: that event alone fails.)
            this.#failed([outgoing], error);
          }
        }
        if (ready.length === 0) continue;
        try {
          await this.#notify(ready.map((r) => r.payload));
          for (const r of ready) r.outgoing.sent?.resolve();
        } catch (error) {
          this.#failed(ready.map((r) => r.outgoing), error);
        }
      }
    } finally {
      this.#sending = null;
    }
  }

  #failed(outgoing: readonly Outgoing[], error: unknown): void {
    liveCounts.notifyFailures += outgoing.length;
    for (const o of outgoing) {
      if (o.sent) o.sent.reject(error);
      else this.#logger?.warn('task event broadcast failed', { taskId: o.event.taskId, type: o.event.type, error: (error as Error).message });
    }
  }

  /** An event's NOTIFY payload: the event, or (too large for a NOTIFY) a reference to it stored. */
  async #payload(event: TaskEvent): Promise<string> {
    const n = this.#numbered++;
    const payload = JSON.stringify({ v: 1, n, event } satisfies Wire);
    if (Buffer.byteLength(payload, 'utf8') <= MAX_NOTIFY_BYTES) return payload;
    const { rows } = await this.#pool.query<{ id: string }>(
      'INSERT INTO fanout_event_payload (task_id, payload) VALUES ($1, $2) RETURNING id::text AS id',
      [event.taskId, JSON.stringify(event)],
    );
    if (Math.random() < 0.05) {
      // Old payloads are only needed by listeners minutes behind; drop them now and then, apart
      // from the notification.
      this.#pool.query(`DELETE FROM fanout_event_payload WHERE created_at < now() - interval '1 hour'`).catch(() => {});
    }
    return JSON.stringify({ v: 1, n, ref: rows[0]!.id, taskId: event.taskId } satisfies Wire);
  }

  async #notify(payloads: readonly string[]): Promise<void> {
    // The notifications of one transaction are delivered in the order they were made: the
    // array's. synchronous_commit off for this transaction only, whoever owns the pool.
    await this.#pool.query("SELECT set_config('synchronous_commit', 'off', true), count(pg_notify($1, p)) FROM unnest($2::text[]) AS p", [this.channel, payloads]);
    this.#sent += payloads.length;
  }

  /**
   * Sends an ending now, in order with what this publisher sent before, and resolves once the
   * notification is sent; rejects when it could not be (the caller announces it again later).
   */
  deliver(input: TaskEvent): Promise<void> {
    const parsed = taskEventSchema.safeParse(input);
    if (!parsed.success) return Promise.reject(new Error(`refusing to deliver a malformed task event: ${parsed.error.message}`));
    const event = parsed.data;
    if (isStateEvent(event) && isTerminalEvent(event)) {
      const pending = this.#pending.get(event.taskId);
      if (pending?.timer) clearTimeout(pending.timer);
      this.#pending.delete(event.taskId);
      if (this.#ended.size >= 10_000) this.#ended.clear();
      this.#ended.set(event.taskId, event.counts.round);
    }
    const sent = Promise.withResolvers<void>();
    this.#queue({ event, sent });
    return sent.promise;
  }

  /** Sends what is waiting (trailing progress included) and waits for it. */
  async flush(): Promise<void> {
    for (const [taskId, pending] of this.#pending) {
      if (pending.timer) clearTimeout(pending.timer);
      pending.timer = null;
      if (pending.latest) this.#send(pending.latest);
      this.#pending.delete(taskId);
    }
    while (this.#sending) await this.#sending;
  }

  async close(): Promise<void> {
    await this.flush();
    if (this.#ownsPool) await this.#pool.end();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
