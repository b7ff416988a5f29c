import { randomUUID } from 'node:crypto';
import type { Job } from 'pg-boss';
import type { AnyFanoutDefinition } from '../define/define-fanout.ts';
import { defaultClassifier } from '../errors/classify.ts';
import { assertStorable, storableText } from './storable.ts';
import { LocalLimit } from '../limits/local-limit.ts';
import type { ClaimedItem, ItemError, Outcome, Release } from '../store/types.ts';
import type { RuntimeContext } from './context.ts';
import { Attempt } from './attempt.ts';
import { LeaseKeeper } from './lease-keeper.ts';
import { errorFields, itemFields, redactText } from './logger.ts';
import { PhaseCount } from './phase-count.ts';
import { GroupCommit } from './group-commit.ts';
import { successorTicket, type SchedulingSettings, type TicketData, type TicketJob } from './scheduler.ts';
import type { ClaimTiming, ItemTelemetry } from '../telemetry/tracing.ts';

/** The work a process claims ahead of its handlers, in time: see `claimedAhead`. */
const AHEAD_MS = 25;

/**
 * Items a process claims beyond its handlers: about `AHEAD_MS` of their work at the items' mean
 * duration so far (a quarter of the handlers before any ended), at least one and at most as many
 * as the handlers. Short items need them to keep the handlers busy through a job's and a claim's
 * round trips (20 ms items: the handlers' number); long ones hardly (10 s items: one). Whatever
 * the duration, what a newcomer's items wait for because of them stays about `AHEAD_MS`.
 */
export function claimedAhead(concurrency: number, meanItemMs: number | null): number {
  if (meanItemMs === null) return Math.max(1, Math.ceil(concurrency / 4));
  return Math.min(concurrency, Math.max(1, Math.ceil((concurrency * AHEAD_MS) / Math.max(meanItemMs, 0.001))));
}

/**
 * The longest a job keeps its worker claiming for its tenant (see `ChildRunner.handleTicket`),
 * however many items there are: then it hands its slot on through the queue as any other job.
 */
const KEEP_MS = 1000;

/** After a job that kept its worker found others waiting, how long its tenant's jobs hand on at once. */
const OTHERS_RECHECK_MS = 250;

/** How long a job of a tenant at its in-flight quota waits before it looks again. */
const QUOTA_RECHECK_MS = 500;

/**
 * How long a handler is waited for after its attempt was stopped (it expired, its task stopped,
 * its claim was lost, the process shuts down) before its item is ended without it. Under the stop's
 * margin (runtime.ts), so a handler that ignores a shutdown still has its item given back before
 * the queue's own timeout.
 */
export const ABANDON_AFTER_MS = 3_000;

/**
 * How much longer than an attempt and its grace (`ABANDON_AFTER_MS`) an item claimed ahead may
 * wait for a free handler before it expires.
 */
const WAIT_MARGIN_MS = 1_000;

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
 * Works the child queue's jobs (see scheduler.ts): each claims the next items of its tenant's
 * tasks in one statement, as many as this process has room for, queues its successor, and
 * starts the handlers under the process's concurrency limit; outcomes are settled through the
 * group-commit buffer. The job is only the delivery: the item rows decide what runs, so a job
 * delivered twice claims other items (or none) and nothing runs twice.
 */
export class ChildRunner {
  readonly #ctx: RuntimeContext;
  readonly #scheduling: SchedulingSettings;
  readonly #enqueueTickets: (kind: string, jobs: readonly TicketJob[]) => Promise<void>;
  /**
   * Whether the definition's child queue holds a job other than the tenant's own window jobs,
   * due or being worked (true when that cannot be known).
   */
  readonly #othersWaiting: (kind: string, tenant: string | null) => Promise<boolean>;
  /** Successor jobs being queued in the background (`#handOn`). */
  readonly #queueing = new Set<Promise<void>>();
  /** When a job that kept its worker last found others waiting, per definition and tenant (`performance.now()`). */
  readonly #othersSeen = new Map<string, number>();
  /** The handlers running at once (`worker.concurrency`). */
  readonly #limit: LocalLimit;
  /**
   * The items this process holds at once: the handlers (a handler no longer waited for among
   * them, until it returns), and a few claimed ahead that wait for one. A handler that ends starts
   * the next held item at once, while the claim that replaces it is on its way, instead of leaving
   * its slot idle for the round trips of a job and a claim.
   */
  readonly #held: LocalLimit;
  /** When a handler last came free (`performance.now()`): an item waiting for one expires only after a long quiet. */
  #lastFreed = 0;
  /** The handlers' mean duration (ms, moving average), which sizes `#held`. */
  #meanItemMs: number | null = null;
  readonly #leases: LeaseKeeper;
  /** Outcomes, group-committed: one settle statement per batch. */
  readonly #settles: GroupCommit<Outcome>;
  /** Transient failures handed back for a later attempt, group-committed too. */
  readonly #releases: GroupCommit<Release>;
  /**
   * Items claimed whose attempt is under way: waiting for a handler, or running until its handler
   * returns or is no longer waited for.
   */
  readonly #running = new PhaseCount();
  /** Items that have run and whose outcome (or release) is not stored yet. */
  readonly #recording = new PhaseCount();
  /** The event of each outcome on its way to the store, emitted once it is stored (see `#settles`). */
  readonly #settledEvents = new Map<string, () => void>();

  constructor(
    ctx: RuntimeContext,
    scheduling: SchedulingSettings,
    enqueueTickets: (kind: string, jobs: readonly TicketJob[]) => Promise<void>,
    othersWaiting: (kind: string, tenant: string | null) => Promise<boolean> = async () => true,
  ) {
    this.#ctx = ctx;
    this.#scheduling = scheduling;
    this.#enqueueTickets = enqueueTickets;
    this.#othersWaiting = othersWaiting;
    this.#limit = new LocalLimit(ctx.settings.concurrency);
    this.#held = new LocalLimit(ctx.settings.concurrency + claimedAhead(ctx.settings.concurrency, null));
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
        // The items' own events before their tasks' (progress, an ending): a stream that ends with
        // its task's ending still carries the outcome of the item whose settle ended it.
        try {
          for (const itemId of result.settled) this.#settledEvents.get(itemId)?.();
        } catch (error) {
          ctx.reportError(error, 'announcing settled items'); // stored all the same
        }
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
      commit: async (releases) => new Set(await ctx.withEnqueuer((enqueue) => ctx.store.releaseItems(releases, enqueue))),
      key: (release) => release.itemId,
      maxBatch: 100,
      maxFlushes: 1,
    });
    // Items running when the runtime shuts down see their signal (one listener for all of them).
    ctx.shutdown.addEventListener('abort', () => this.#leases.abortAll('shutdown'), { once: true });
  }

  /**
   * Resolves once every attempt of this process has ended and its outcome (or release) is stored
   * (or has failed): each handler has returned, or was no longer waited for (see `ABANDON_AFTER_MS`).
   */
  async drain(): Promise<void> {
    await this.#running.atMost(0);
    await this.#recording.atMost(0);
    await Promise.all([this.#settles.idle(), this.#releases.idle(), this.#ctx.itemLogs.drain(), ...this.#queueing]);
    // The claims this process is done with are forgotten now rather than left to lapse.
    await this.#leases.flushEnded().catch((error: unknown) => this.#ctx.reportError(error, 'ending claims'));
    this.#leases.stop();
  }

  /**
   * Works one job of the child queue: waits for room for at least one item, claims the next items
   * of the job's tenant (up to the room and `batchSize`), and starts the handlers. When the claim
   * took all it asked for and the queue holds no other job, waiting or being worked
   * (`othersWaiting`: another tenant's, or retries come due), the job goes on in this process
   * once there is room again, claiming for the tenant's next task, for up to `KEEP_MS`; otherwise
   * it queues its successor (when there was something to claim) and ends. Resolves once this
   * process has room again (so its fetch loop takes a job only when it can run its items) and the
   * outcomes waiting to be stored stay within one process's worth; the items keep their claims,
   * with their leases renewed, until their outcomes are stored, and if this process dies first the
   * leases lapse and the maintenance loop gives the items again. Resolves false when the job had
   * nothing to do (its tenant has nothing to run now, and no successor was queued).
   */
  async handleTicket(definition: AnyFanoutDefinition, job: Job<TicketData>): Promise<boolean> {
    const ctx = this.#ctx;
    const signal = AbortSignal.any([job.signal, ctx.shutdown]);
    const keepUntil = performance.now() + KEEP_MS;
    let ticket = job.data;
    /** The successor this job holds while it keeps its worker (not queued yet). */
    let kept: TicketJob | null = null;
    for (let round = 0; ; round++) {
      let room: number;
      try {
        room = await this.#held.acquireSome(ctx.settings.batchSize, signal);
      } catch (error) {
        // Stopped while it kept its worker: its slot goes on elsewhere.
        if (kept) await this.#handOn(definition.name, kept);
        throw error;
      }
      let claimed: ClaimedItem[] = [];
      let token = '';
      const claiming = ctx.telemetry.claimStarted(room);
      let claim: ClaimTiming | null = null;
      let successor: TicketJob | null = null;
      try {
        token = randomUUID();
        const result = await ctx.store.claimNext({
          kind: definition.name,
          tenant: ticket.tenant,
          after: ticket.after ?? null,
          limit: room,
          token,
          leaseMs: ctx.settings.leaseMs,
          maxInFlight: this.#scheduling.maxInFlightPerTenant,
          maxRunningTasks: this.#scheduling.maxRunningTasksPerTenant,
        });
        claimed = result.claimed;
        claim = claiming.ended(claimed.length);
        // The chain goes on while there is something to take: items claimed, or a task whose items
        // a concurrent job locked first (the next job moves on to the next task), or a quota that
        // will free up. It ends when the tenant has nothing to run now.
        successor =
          claimed.length > 0 || result.taskId !== null
            ? successorTicket(ticket, result.taskId)
            : result.atQuota
              ? successorTicket(ticket, ticket.after ?? null, new Date(Date.now() + QUOTA_RECHECK_MS))
              : null;
      } finally {
        for (let i = claimed.length; i < room; i++) this.#held.release();
      }
      // The items start before the successor goes in: their handlers do not wait on its round trip,
      // and a successor that cannot be stored strands nothing (the maintenance loop tops up the
      // window of a running task that has items left).
      for (const item of claimed) this.#start(definition, new Attempt(ctx, item, token), ctx.telemetry.item(item, claim!));
      // A claim that took all it asked for, a batch's worth (a full batch, or all the items held
      // ahead of the handlers), may well find more: this job keeps its worker (see below). A small
      // room (a busy process) is not worth the read that keeping asks for, and neither is a tenant
      // that found someone else in the queue a moment ago (busy tenants side by side: their jobs
      // take turns through the queue, as they would without keeping).
      const ahead = this.#held.limit - ctx.settings.concurrency;
      const worth = Math.min(ctx.settings.batchSize, ahead);
      const seenKey = `${definition.name}\u0000${ticket.tenant ?? ''}`;
      const seen = this.#othersSeen.get(seenKey);
      const now = performance.now();
      const keep = successor !== null && claimed.length === room && room >= worth && ticket.slot >= 0 && now < keepUntil && (seen === undefined || now - seen >= OTHERS_RECHECK_MS);
      if (successor && !keep) await this.#enqueueTickets(definition.name, [successor]);
      if (claimed.length === 0) return round > 0 || successor !== null;
      // Take the next job (or claim again) only once half the items held ahead have started (at
      // most a batch): the other half keeps the handlers busy through the next round trips, and the
      // claims are as large as that allows (a job per freed slot would cost a fetch, a claim and a
      // successor per item). Long items, with one item ahead, go on as soon as a handler is free.
      const enough = Math.min(ctx.settings.batchSize, Math.max(1, Math.ceil(ahead / 2)));
      await this.#held.whenFree(enough, ctx.shutdown).catch(() => {});
      await this.#recording.atMost(ctx.settings.concurrency);
      if (!keep) return true;
      // Going on here costs one light read instead of the successor's insert, its fetch and the
      // completion of this job; the read answers whether that would put anyone else first. Anyone
      // waiting (or not knowing) hands the slot on through the queue, as a job that did not keep it.
      const yieldTo = signal.aborted || (await this.#othersWaiting(definition.name, ticket.tenant).catch(() => true));
      if (yieldTo) {
        if (this.#othersSeen.size >= 1000) this.#othersSeen.clear(); // (tenants come and go)
        this.#othersSeen.set(seenKey, performance.now());
        // The successor goes in while this loop already fetches what waits (it is not waited for:
        // the job another tenant is waiting with is fetched one round trip sooner).
        void this.#handOn(definition.name, successor!);
        return true;
      }
      kept = successor!;
      ticket = kept.data;
    }
  }

  /**
   * Queues the successor of a job that kept its worker. One that cannot be stored strands nothing
   * (the maintenance loop tops up the window of a running task that has items left); drain waits
   * for those still on their way.
   */
  #handOn(kind: string, successor: TicketJob): Promise<void> {
    const queued: Promise<void> = this.#enqueueTickets(kind, [successor])
      .catch((error: unknown) => this.#ctx.reportError(error, 'queueing the next job of a slot'))
      .finally(() => this.#queueing.delete(queued));
    this.#queueing.add(queued);
    return queued;
  }

  /** Follows the handlers' mean duration and sizes the items held ahead of them by it. */
  #itemRan(ms: number): void {
    const mean = (this.#meanItemMs = this.#meanItemMs === null ? ms : this.#meanItemMs * 0.9 + ms * 0.1);
    const held = this.#ctx.settings.concurrency + claimedAhead(this.#ctx.settings.concurrency, mean);
    if (held !== this.#held.limit) this.#held.resize(held);
  }

  /**
   * Runs one claimed item once a handler is free (at once, unless it was claimed ahead), then
   * records its outcome: one promise from the claim to the stored outcome, which never rejects.
   */
  #start(definition: AnyFanoutDefinition, attempt: Attempt, tel: ItemTelemetry): void {
    this.#running.up();
    void this.#attempt(definition, attempt, tel);
  }

  async #attempt(definition: AnyFanoutDefinition, attempt: Attempt, tel: ItemTelemetry): Promise<void> {
    const ctx = this.#ctx;
    const item = attempt.claimed;
    let ran: Ran | null = null;
    let failure: unknown;
    try {
      ran = await this.#run(definition, attempt, tel);
    } catch (error) {
      failure = error;
      ctx.reportError(error, `running item ${item.itemId}`, itemFields(item));
    } finally {
      this.#recording.up();
      this.#running.down();
    }
    // Recorded in the background (see handleTicket). The lease is renewed until the outcome is
    // stored; if storing fails, renewals stop too, so the lease lapses and the maintenance loop
    // takes over.
    try {
      if (ran) await this.#record(attempt, ran, tel);
    } catch (error) {
      failure = error;
      tel.inContext(() => ctx.reportError(error, `storing the outcome of item ${item.itemId}`, itemFields(item)));
    } finally {
      tel.end(failure);
      // A claim whose outcomes could not all be stored is not ended: its lease lapses, and the
      // maintenance loop gives what it still holds again.
      this.#leases.untrack(item.itemId, attempt.token, failure === undefined);
      this.#recording.down();
    }
  }

  /** Waits for a handler, runs it, and says what to store: an outcome, a release, or nothing (the claim was lost). */
  async #run(definition: AnyFanoutDefinition, attempt: Attempt, tel: ItemTelemetry): Promise<Ran> {
    const ctx = this.#ctx;
    const item = attempt.claimed;
    const token = attempt.token;
    // An attempt's handler may run for up to the definition's expiry, counted from its start: an
    // item claimed ahead does not spend it waiting for a handler. That wait is bounded too, and
    // ends the attempt as an expired one (see below).
    const expireMs = definition.resolved.child.expireInSeconds * 1000;
    let expiry: NodeJS.Timeout | undefined;
    this.#leases.track(item.itemId, attempt); // also how a shutdown reaches it
    if (ctx.shutdown.aborted) attempt.abort('shutdown');

    let outcome: Outcome | null = null;
    let release: Ran['release'] = null;
    let startedAt: number | null = null;
    try {
      // An item claimed ahead waits here for a handler (a stop, a lost claim or a shutdown while
      // it waits ends it as it would end a running one). Tasks take turns: a small task's items,
      // claimed behind a large one's, start after a few of its items, not after all it holds.
      attempt.throwIfStopped();
      if (!this.#limit.tryAcquire()) {
        // Behind handlers that never return (they ignore their signals), an item would wait for
        // ever under a renewed lease, and given back it would be claimed again to wait again: so
        // a wait through which no handler of this process came free for longer than an attempt
        // and its grace uses the attempt, and the item's attempts end the cycle. Handlers that
        // come free (and whose places other tasks' items may take first, in turn) keep it waiting.
        const bound = expireMs + ABANDON_AFTER_MS + WAIT_MARGIN_MS;
        const check = () => {
          const quiet = performance.now() - this.#lastFreed;
          if (quiet >= bound) return attempt.abort('expired');
          expiry = setTimeout(check, bound - quiet);
          expiry.unref();
        };
        expiry = setTimeout(check, bound);
        expiry.unref();
        try {
          await this.#limit.acquire(attempt.signal, item.taskId);
        } finally {
          clearTimeout(expiry);
        }
      }
      startedAt = performance.now();
      expiry = setTimeout(expire, expireMs, attempt);
      expiry.unref();
      ctx.stats.inFlight++;
      let handling: Promise<unknown> | null = null;
      try {
        ctx.events.emit('item.started', attempt.base);
        const snapshot = definition.item.parse(item.snapshot);
        handling = tel.handler(() => definition.runItem(snapshot, attempt));
        let result = await attempt.waitFor(handling, ABANDON_AFTER_MS);
        if (definition.result) result = definition.result.parse(result);
        // A result that cannot be stored fails its item now, with a reason, instead of its settle.
        assertStorable(result, 'result', 'invalid_result');
        outcome = { itemId: item.itemId, token, status: 'succeeded', result: result ?? null };
      } finally {
        if (attempt.abandoned && handling) {
          // Its handler runs on: it keeps its place among this process's handlers until it
          // returns, so handlers that ignore their signals cannot pile up past the concurrency.
          tel.inContext(() =>
            ctx.logger.warn(
              `a handler ignored its signal: still running ${ABANDON_AFTER_MS / 1000} s after its attempt was stopped (${attempt.why}); its item is ended as stopped (and may run again while this handler runs on), and the handler keeps its place among this process's handlers until it returns`,
              itemFields(item),
            ),
          );
          // Its place among the items this process holds too (`#held`, which sizes its claims):
          // a process whose handlers all hang claims no more than its few items ahead (which
          // expire waiting, and use up their attempts), not a claim's worth each time.
          const free = () => {
            ctx.stats.inFlight--;
            this.#lastFreed = performance.now();
            this.#limit.release();
            this.#held.release();
          };
          handling.then(free, free);
        } else {
          ctx.stats.inFlight--;
          this.#lastFreed = performance.now();
          this.#limit.release();
        }
      }
    } catch (error) {
      const why = attempt.why;
      if (why) tel.aborted(why);
      if (why === 'task_stopped') {
        outcome = { itemId: item.itemId, token, status: 'cancelled' };
      } else if (why === 'claim_lost') {
        // Another worker owns the item now.
        outcome = null;
        tel.inContext(() => ctx.logger.warn('lost the claim of an item: its lease lapsed while it ran, and another worker may run it', itemFields(item)));
      } else if (why === 'shutdown') {
        // Not a failure: the item goes back at once, and the attempt it was on does not count (a
        // rolling deploy must not use up items' attempts). If the store cannot be reached, the
        // lease lapses and the maintenance loop gives the item again.
        release = { error: { code: 'shutdown', message: 'its process shut down before it finished', attempt: item.attempt }, delayMs: 0, refund: true };
      } else {
        const classified = (definition.classify ?? defaultClassifier)(error);
        const itemError: ItemError =
          why === 'expired'
            ? {
                code: 'expired',
                message:
                  startedAt === null
                    ? `expired waiting for a free handler: none of its process's handlers came free for ${(expireMs + ABANDON_AFTER_MS + WAIT_MARGIN_MS) / 1000}s (they ignore their signals)`
                    : `job expired after ${definition.resolved.child.expireInSeconds}s`,
                attempt: item.attempt,
              }
            : // Stored on the item, shown by the API and the console, streamed: credentials masked.
              { code: storableText(classified.code), message: storableText(redactText(classified.message)), attempt: item.attempt };
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
        // Written in the item span, so the line carries the item's trace.
        tel.inContext(() =>
          ctx.logger.debug('item failed', { ...errorFields(error), ...itemFields(item), code: itemError.code, message: itemError.message, retry: !!release, ...(release ? { delayMs } : {}) }),
        );
      }
    } finally {
      clearTimeout(expiry);
      if (startedAt !== null) this.#itemRan(performance.now() - startedAt);
      if (!attempt.abandoned) this.#held.release();
    }
    return { outcome, release, durationMs: startedAt === null ? null : performance.now() - startedAt };
  }

  async #record(attempt: Attempt, ran: Ran, tel: ItemTelemetry): Promise<void> {
    const ctx = this.#ctx;
    const item = attempt.claimed;
    const { release, durationMs } = ran;
    let outcome = ran.outcome;

    if (release) {
      const released = await tel.retry(release, () =>
        this.#releases.push({ itemId: item.itemId, token: attempt.token, error: release.error, delayMs: release.delayMs, ...(release.refund ? { refund: true } : {}) }),
      );
      if (released) {
        if (!release.refund) ctx.events.emit('item.failed', { ...attempt.base, error: release.error, willRetry: true });
        return;
      }
      // The task stopped meanwhile: there will be no retry, so the item ends here, cancelled.
      outcome = { itemId: item.itemId, token: attempt.token, status: 'cancelled' };
    }
    // Without an outcome, or when the claim was lost meanwhile, another worker owns the item.
    if (!outcome) return;
    const settled = outcome;
    const announce = () => {
      if (settled.status === 'succeeded') ctx.events.emit('item.succeeded', { ...attempt.base, result: settled.result });
      else if (settled.status === 'failed') ctx.events.emit('item.failed', { ...attempt.base, error: settled.error!, willRetry: false });
      else ctx.events.emit('item.cancelled', attempt.base);
    };
    this.#settledEvents.set(settled.itemId, announce);
    try {
      if (!(await tel.settle(settled, this.#settles))) return;
    } finally {
      if (this.#settledEvents.get(settled.itemId) === announce) this.#settledEvents.delete(settled.itemId);
    }
    ctx.stats.settled(item.kind, settled.status, durationMs);
    tel.settled(settled, durationMs);
  }
}

/** What an attempt leaves to store: its outcome, or its release for a later attempt, or nothing. */
interface Ran {
  outcome: Outcome | null;
  release: { error: ItemError; delayMs: number; refund?: boolean } | null;
  durationMs: number | null;
}

/** An attempt's expiry (a timer's callback, shared by all). */
function expire(attempt: Attempt): void {
  attempt.abort('expired');
}
