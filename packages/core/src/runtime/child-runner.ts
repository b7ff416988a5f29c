import { randomUUID } from 'node:crypto';
import type { Job } from 'pg-boss';
import type { AnyFanoutDefinition, ItemContext } from '../define/define-fanout.ts';
import { defaultClassifier } from '../errors/classify.ts';
import { FanoutError } from '../errors/errors.ts';
import { assertStorable, withoutNul } from './storable.ts';
import type { ItemEventBase } from '../events/events.ts';
import { LocalLimit } from '../limits/local-limit.ts';
import type { ClaimedItem, ItemError, Outcome, Release } from '../store/types.ts';
import type { RuntimeContext } from './context.ts';
import { LeaseKeeper, type AbortWhy } from './lease-keeper.ts';
import { childLogger, errorFields, itemFields, redact, redactText } from './logger.ts';
import { GroupCommit } from './group-commit.ts';
import type { ItemTelemetry, JobTraceFields } from '../telemetry/tracing.ts';

export interface ChildJobData extends JobTraceFields {
  taskId: string;
  itemId: string;
}

/**
 * The longest a retry waits, whatever a server's `Retry-After` says (a day): beyond it, or beyond
 * the task's deadline, the item fails now with the reason instead of waiting.
 */
export const MAX_RETRY_DELAY_MS = 24 * 3600_000;

/** Delay before retry `attempt + 1`: exponential with jitter, never sooner than Retry-After. */
export function retryDelayMs(definition: AnyFanoutDefinition, attempt: number, retryAfterMs?: number): number {
  const { retryDelaySeconds, retryBackoff, retryDelayMaxSeconds } = definition.resolved.child;
  let delay = retryDelaySeconds * 1000;
  if (retryBackoff) {
    const exp = retryDelaySeconds * 1000 * 2 ** Math.min(attempt - 1, 16);
    delay = exp / 2 + Math.random() * (exp / 2);
  }
  delay = Math.min(delay, retryDelayMaxSeconds * 1000);
  // A Retry-After that is not a finite number of ms (a date years away, garbage) is "too far".
  const after = retryAfterMs === undefined ? 0 : Number.isFinite(retryAfterMs) ? retryAfterMs : Number.POSITIVE_INFINITY;
  const wanted = Math.max(delay, after);
  return Math.round(Math.min(wanted, Number.MAX_SAFE_INTEGER));
}

/**
 * Works child jobs: claims their items in one statement, runs the handlers under the process's
 * concurrency limit, and settles outcomes through the group-commit buffer. The pg-boss job is
 * only the delivery; the item row decides what happens, so a duplicate delivery finds the item
 * claimed or settled and does nothing.
 */
export class ChildRunner {
  readonly #ctx: RuntimeContext;
  readonly #limit: LocalLimit;
  readonly #leases: LeaseKeeper;
  /** Outcomes, group-committed: one settle statement per batch. */
  readonly #settles: GroupCommit<Outcome>;
  /** Transient failures handed back for a later attempt, group-committed too. */
  readonly #releases: GroupCommit<Release>;
  /** Items that have run and whose outcome (or release) is not stored yet. */
  readonly #recording = new Set<Promise<void>>();

  constructor(ctx: RuntimeContext) {
    this.#ctx = ctx;
    this.#limit = new LocalLimit(ctx.settings.concurrency);
    this.#leases = new LeaseKeeper(ctx.store, {
      leaseMs: ctx.settings.leaseMs,
      pollMs: ctx.settings.controlPollMs,
      onError: (error) => ctx.reportError(error, 'lease renewal'),
    });
    this.#settles = new GroupCommit<Outcome>({
      commit: (outcomes) => ctx.telemetry.settleBatch(outcomes.map((o) => o.itemId), async () => {
        // An item's log lines are stored before its outcome: whoever sees it finished can read
        // them. Nothing to do (and no statement) when no handler logged.
        await ctx.itemLogs.flush();
        const result = await ctx.store.settleItems(outcomes);
        try {
          ctx.afterSettle(result);
        } catch (error) {
          ctx.reportError(error, 'announcing settled items'); // stored all the same
        }
        return new Set(result.settled);
      }),
      key: (outcome) => outcome.itemId,
      maxBatch: 500,
      maxFlushes: 2,
    });
    this.#releases = new GroupCommit<Release>({
      commit: async (releases) => new Set(await ctx.store.releaseItems(releases, ctx.enqueueChildren)),
      key: (release) => release.itemId,
      maxBatch: 100,
      maxFlushes: 1,
    });
    // Items running when the runtime shuts down see their signal (one listener for all of them).
    ctx.shutdown.addEventListener('abort', () => this.#leases.abortAll('shutdown'), { once: true });
  }

  /** Resolves once every outcome and release of this process is stored (or has failed). */
  async drain(): Promise<void> {
    while (this.#recording.size > 0) await Promise.allSettled([...this.#recording]);
    await Promise.all([this.#settles.idle(), this.#releases.idle(), this.#ctx.itemLogs.drain()]);
    this.#leases.stop();
  }

  /**
   * Resolves once every claimed item has run and its outcome waits in the group commit (or its
   * retry is being scheduled); pg-boss then completes the whole batch and fetches the next one
   * while the outcomes are stored. The job is only the delivery: until its outcome is stored an
   * item keeps its claim, with its lease renewed, and if this process dies first the lease lapses
   * and the maintenance loop gives the item again. Jobs whose item was not claimable (settled,
   * held by a live claim, task stopped) are done too: the item row, not the job, carries the work.
   */
  async handleBatch(definition: AnyFanoutDefinition, jobs: Job<ChildJobData>[]): Promise<void> {
    const jobByItem = new Map<string, Job<ChildJobData>>();
    for (const job of jobs) if (!jobByItem.has(job.data.itemId)) jobByItem.set(job.data.itemId, job);
    const token = randomUUID();
    const claiming = this.#ctx.telemetry.claimStarted(jobByItem.size);
    const { claimed } = await this.#ctx.store.claimItems([...jobByItem.keys()], token, this.#ctx.settings.leaseMs);
    const claim = claiming.ended(claimed.length);
    await Promise.all(
      claimed.map((item) => {
        const job = jobByItem.get(item.itemId)!;
        return this.#runOne(definition, item, token, job.signal, this.#ctx.telemetry.item(item, job.data, claim));
      }),
    );
    // Fetch more only while the outcomes waiting to be stored stay within one process's worth.
    while (this.#recording.size > this.#ctx.settings.concurrency) await Promise.race(this.#recording);
  }

  async #runOne(definition: AnyFanoutDefinition, item: ClaimedItem, token: string, jobSignal: AbortSignal, tel: ItemTelemetry): Promise<void> {
    const ctx = this.#ctx;
    const controller = new AbortController();
    let why: AbortWhy | 'expired' | null = null;
    const abort = (reason: typeof why) => {
      if (controller.signal.aborted) return;
      why = reason;
      controller.abort(new FanoutError('aborted', `item ${item.itemId} aborted: ${reason}`));
    };
    const onJobAbort = () => abort('expired');
    jobSignal.addEventListener('abort', onJobAbort, { once: true });
    this.#leases.track(item.itemId, token, item.taskId, abort); // also how a shutdown reaches it
    if (ctx.shutdown.aborted) abort('shutdown');

    const base: ItemEventBase = {
      taskId: item.taskId,
      itemId: item.itemId,
      key: item.key,
      kind: item.kind,
      tenant: item.tenant,
      attempt: item.attempt,
    };
    let outcome: Outcome | null = null;
    let release: { error: ItemError; delayMs: number; refund?: boolean } | null = null;
    let startedAt: number | null = null;
    try {
      await this.#limit.acquire(controller.signal);
      startedAt = performance.now();
      ctx.stats.inFlight++;
      try {
        ctx.events.emit('item.started', base);
        let logger: ItemContext['logger'] | null = null;
        const itemContext: ItemContext = {
          signal: controller.signal,
          item: { id: item.itemId, key: item.key, taskId: item.taskId, attempt: item.attempt, maxAttempts: item.maxAttempts, round: item.round },
          task: { id: item.taskId, tenant: item.tenant },
          log: (given, raw) => {
            // Stored, streamed and written out: credentials in a line are masked on every path.
            const message = redactText(given);
            const data = raw === undefined ? undefined : (redact(raw) as Record<string, unknown>);
            ctx.itemLogs.add({ taskId: item.taskId, itemId: item.itemId, attempt: item.attempt, at: new Date(), message, data });
            ctx.logger.debug(message, { ...itemFields(item), ...data });
            ctx.events.emit('item.log', data ? { ...base, message, data } : { ...base, message });
          },
          progress: (detail) => ctx.events.emit('item.progress', { ...base, ...detail }),
          limits: ctx.limits,
          // Every line the handler logs carries the item's ids (made on first use: most handlers never log).
          get logger() {
            return (logger ??= childLogger(ctx.logger, itemFields(item)));
          },
        };
        const snapshot = definition.item.parse(item.snapshot);
        let result = await tel.handler(async () => definition.runItem(snapshot, itemContext));
        if (definition.result) result = definition.result.parse(result);
        // A result that cannot be stored fails its item now, with a reason, instead of its settle.
        assertStorable(result, 'result', 'invalid_result');
        outcome = { itemId: item.itemId, token, status: 'succeeded', result: result ?? null };
      } finally {
        ctx.stats.inFlight--;
        this.#limit.release();
      }
    } catch (error) {
      if (why) tel.aborted(why);
      if (why === 'task_stopped') {
        outcome = { itemId: item.itemId, token, status: 'cancelled' };
      } else if (why === 'claim_lost') {
        // Another worker owns the item now.
        outcome = null;
      } else if (why === 'shutdown') {
        // Not a failure: the item goes back at once, and the attempt it was on does not count (a
        // rolling deploy must not use up items' attempts). If the store cannot be reached, the
        // lease lapses and the maintenance loop gives the item again.
        release = { error: { code: 'shutdown', message: 'its process shut down before it finished', attempt: item.attempt }, delayMs: 0, refund: true };
      } else {
        const classified = (definition.classify ?? defaultClassifier)(error);
        const itemError: ItemError =
          why === 'expired'
            ? { code: 'expired', message: `job expired after ${definition.resolved.child.expireInSeconds}s`, attempt: item.attempt }
            : { code: withoutNul(classified.code), message: withoutNul(classified.message), attempt: item.attempt };
        const transient = why === 'expired' || classified.kind === 'transient';
        const delayMs = transient ? retryDelayMs(definition, item.attempt, classified.retryAfterMs) : 0;
        const tooLate = delayMs > MAX_RETRY_DELAY_MS || (item.deadlineAt !== null && Date.now() + delayMs >= item.deadlineAt.getTime());
        if (transient && item.attempt < item.maxAttempts && !tooLate) {
          release = { error: itemError, delayMs };
        } else {
          // Out of attempts on a transient failure, it may well work later; a permanent one will not.
          const why = transient && item.attempt < item.maxAttempts ? ` (its next attempt would be in ${Math.round(delayMs / 1000)} s, ${delayMs > MAX_RETRY_DELAY_MS ? 'more than a day away' : "after the task's deadline"})` : '';
          outcome = { itemId: item.itemId, token, status: 'failed', error: { ...itemError, message: `${itemError.message}${why}`, retryable: transient } };
        }
        const giveUp = !transient || release ? undefined : item.attempt >= item.maxAttempts ? 'out_of_attempts' : delayMs > MAX_RETRY_DELAY_MS ? 'delay_too_long' : 'past_deadline';
        tel.failed(error, { code: itemError.code, kind: transient ? 'transient' : 'permanent', retry: !!release, delayMs, ...(giveUp ? { giveUp } : {}) });
        ctx.logger.debug('item failed', { ...itemFields(item), code: itemError.code, message: itemError.message, retry: !!release, ...(release ? { delayMs } : {}), ...errorFields(error) });
      }
    } finally {
      jobSignal.removeEventListener('abort', onJobAbort);
    }
    // Recorded in the background (see handleBatch). The lease is renewed until the outcome is
    // stored; if storing fails, renewals stop too, so the lease lapses and the maintenance loop
    // takes over.
    const durationMs = startedAt === null ? null : performance.now() - startedAt;
    let recordFailure: unknown;
    const recording: Promise<void> = this.#record(item, token, base, outcome, release, durationMs, tel)
      .catch((error: unknown) => {
        recordFailure = error;
        ctx.reportError(error, `storing the outcome of item ${item.itemId}`, itemFields(item));
      })
      .finally(() => {
        tel.end(recordFailure);
        this.#leases.untrack(item.itemId, token);
        ctx.itemLogs.attemptDone(item.itemId, item.attempt);
        this.#recording.delete(recording);
      });
    this.#recording.add(recording);
  }

  async #record(
    item: ClaimedItem,
    token: string,
    base: ItemEventBase,
    recorded: Outcome | null,
    release: { error: ItemError; delayMs: number; refund?: boolean } | null,
    durationMs: number | null,
    tel: ItemTelemetry,
  ): Promise<void> {
    const ctx = this.#ctx;
    let outcome = recorded;

    if (release) {
      const released = await tel.retry(release, () =>
        this.#releases.push({ itemId: item.itemId, token, error: release.error, delayMs: release.delayMs, ...(release.refund ? { refund: true } : {}) }),
      );
      if (released) {
        if (!release.refund) ctx.events.emit('item.failed', { ...base, error: release.error, willRetry: true });
        return;
      }
      // The task stopped meanwhile: there will be no retry, so the item ends here, cancelled.
      outcome = { itemId: item.itemId, token, status: 'cancelled' };
    }
    // Without an outcome, or when the claim was lost meanwhile, another worker owns the item.
    if (!outcome || !(await tel.settle(outcome, (o) => this.#settles.push(o)))) return;
    ctx.stats.settled(item.kind, outcome.status, durationMs);
    tel.settled(outcome, durationMs);
    if (outcome.status === 'succeeded') ctx.events.emit('item.succeeded', { ...base, result: outcome.result });
    else if (outcome.status === 'failed') ctx.events.emit('item.failed', { ...base, error: outcome.error!, willRetry: false });
    else ctx.events.emit('item.cancelled', base);
  }
}
