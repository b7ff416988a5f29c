import { randomUUID } from 'node:crypto';
import { FanoutError, PermanentError } from '../errors/errors.ts';
import { isTerminalTaskStatus, type TaskRecord } from '../store/types.ts';
import type { RuntimeContext } from './context.ts';
import { childLogger, errorFields, itemFields, taskFields } from './logger.ts';

export interface MaintenanceSettings {
  /** How often each process runs a maintenance pass. @default 5000 */
  intervalMs: number;
  /** Unfinished tasks untouched this long get their counters recomputed from item rows. @default 60000 */
  reconcileIdleMs: number;
  /** Lease of a fan-in hook run, renewed while it runs; a crashed run is retried after it. @default 60000 */
  fanInLeaseMs: number;
  /**
   * An ending not recorded as announced this long after it happened (its process died, or the
   * broadcast failed) is announced again by a maintenance pass. @default 30000
   */
  announceGraceMs: number;
  /**
   * Retention: the items and item logs of a task that finished this long ago are deleted (in
   * batches, by the maintenance loop), once its ending was announced and its fan-in ran; the
   * task row stays, with `purgedAt`. Retry-failed is refused from `retentionMs` minus a margin
   * (a tenth of it, at most an hour) after the end. null keeps everything. @default null
   */
  retentionMs: number | null;
  /**
   * Each pass vacuums Fanout's tables whose dead rows passed a threshold (see the store's
   * `vacuumTables`), so the space of updated and deleted rows is reused between autovacuum's
   * visits. false leaves it all to autovacuum. @default true
   */
  vacuum: boolean;
}

/**
 * Rows deleted by retention per batch (each batch a transaction), and how long a pass goes on
 * with batches while there is more: a pass stays short, and keeps up with many small tasks.
 */
const PURGE_BATCH = 2000;
const PURGE_PASS_MS = 1000;

/** How long before the end of its retention a finished task can no longer be retried. */
export function retentionMargin(retentionMs: number): number {
  return Math.min(3600_000, Math.floor(retentionMs / 10));
}

/**
 * One maintenance pass: an iteration of the maintenance loop every worker process runs. Each step
 * is a conditional update, so any number of processes may run passes at once without doing
 * anything twice:
 * - recover lapsed claims: items whose holder died (lease lapsed) go back to pending with a fresh
 *   job, or count as failed when that was their last attempt;
 * - stop overdue tasks: running tasks past their deadline stop;
 * - reconcile idle tasks: counters recomputed from item rows, the task finished if all are
 *   settled; a task whose manager job is gone for good is stopped, and stray pending items of a
 *   stopping task are cancelled;
 * - requeue orphaned items: a quiet running task with pending items gets its tenant's jobs topped up;
 * - announce missed endings: a task that ended without its ending being delivered gets it again;
 * - run pending fan-ins: finished tasks whose fan-in hook has not run get it run;
 * - retention (when `retentionMs` is set): items and logs of tasks finished long ago are deleted;
 * - vacuum (unless turned off): tables with many dead rows are vacuumed.
 *
 * Fan-ins and purges run the app's hooks, which may take long, or hang. They run in lanes (see
 * `startHookLanes`). With `awaitHooks: false` (the maintenance loop) the pass starts a lane only
 * when its run of an earlier pass has settled, and does not wait for it, so a hook that hangs holds
 * up its own definition's fan-ins or purges in this process, never the recoveries, deadlines,
 * endings or other definitions. Otherwise (`runMaintenance`) it waits for a lane's earlier run,
 * then runs it again, and resolves once all have run.
 */
export async function maintenancePass(
  ctx: RuntimeContext,
  settings: MaintenanceSettings,
  kinds: readonly string[],
  maxRunningTasks: number | null = null,
  options: { awaitHooks?: boolean } = {},
): Promise<void> {
  // Each step is timed into the process's stats (its presence report), so an operator sees which
  // of the loop's queries grows with the tables.
  const timed = async (step: string, run: () => Promise<void>) => {
    const started = performance.now();
    try {
      await run();
    } finally {
      ctx.stats.maintenanceStep(step, performance.now() - started);
    }
  };
  await timed('recover', () => recoverLapsed(ctx));
  await timed('overdue', () => stopOverdue(ctx));
  await timed('reconcile', () => reconcileIdle(ctx, settings, maxRunningTasks));
  await timed('announce', () => announceMissedEndings(ctx, kinds, settings));
  const wait = options.awaitHooks !== false;
  const hooks = startHookLanes(ctx, settings, kinds, wait, timed);
  if (!wait) for (const run of hooks) run.catch((error: unknown) => ctx.reportError(error, 'maintenance pass'));
  const rest = (async () => {
    // Timed apart from the queries: a vacuum reads the table's changed pages, and takes longer.
    if (settings.vacuum && ctx.store.vacuumTables) await timed('vacuum', () => vacuumTables(ctx));

    // Presence rows and metric buckets older than a day are of no use to anyone; one pass in fifty
    // (in whichever process) clears them.
    if (Math.random() < 0.02) await ctx.store.pruneOperations(24 * 3600_000);
  })();
  if (!wait) return rest;
  // Every run waited for, whichever fails: the first failure is the pass's.
  const failure = (await Promise.allSettled([rest, ...hooks])).find((outcome) => outcome.status === 'rejected');
  if (failure) throw failure.reason;
}

/** Per runtime: the hook lanes running, by lane. */
const hookRuns = new WeakMap<RuntimeContext, Map<string, Promise<void>>>();

/**
 * Starts the fan-ins and the retention of `kinds`, each in lanes: one lane for the definitions
 * without the step's hook (their fan-ins or purges are queries only), and one lane per definition
 * with it, so that its hook, however long it runs, holds up no other. A lane whose earlier run has
 * not settled is skipped (another process takes the lane's work meanwhile: a hook's run is held
 * under a lease, renewed while it runs), or with `wait` started again once it settled. A run still
 * going after `fanInLeaseMs` is logged. Resolves the runs started.
 */
function startHookLanes(
  ctx: RuntimeContext,
  settings: MaintenanceSettings,
  kinds: readonly string[],
  wait: boolean,
  timed: (step: string, run: () => Promise<void>) => Promise<void>,
): Promise<void>[] {
  const lanes = hookRuns.get(ctx) ?? new Map<string, Promise<void>>();
  hookRuns.set(ctx, lanes);
  const started: Promise<void>[] = [];
  const start = (step: 'fanIn' | 'retention', hooked: (kind: string) => boolean, work: (kinds: string[]) => Promise<void>) => {
    const launch = (lane: string, laneKinds: string[]) => {
      const began = Date.now();
      const slow = setTimeout(() => {
        ctx.logger.warn(`the ${step === 'fanIn' ? 'fan-ins' : 'purges'} of this process have run for ${Math.round((Date.now() - began) / 1000)} s; it starts no other of these definitions until they settle (other processes do)`, {
          definitions: laneKinds,
        });
      }, settings.fanInLeaseMs);
      slow.unref();
      const run = timed(step, () => work(laneKinds)).finally(() => {
        clearTimeout(slow);
        if (lanes.get(lane) === settled) lanes.delete(lane);
      });
      // (Its failure is reported by whoever waits for the run: the pass, or the loop.)
      const settled = run.catch(() => {});
      lanes.set(lane, settled);
      return run;
    };
    const plain = kinds.filter((kind) => !hooked(kind));
    const groups = [...(plain.length > 0 ? [{ lane: step, kinds: plain }] : []), ...kinds.filter(hooked).map((kind) => ({ lane: `${step}:${kind}`, kinds: [kind] }))];
    for (const { lane, kinds: laneKinds } of groups) {
      const busy = lanes.get(lane);
      if (!busy) started.push(launch(lane, laneKinds));
      else if (wait) started.push(busy.then(() => launch(lane, laneKinds)));
    }
  };
  start('fanIn', (kind) => Boolean(ctx.definition(kind).onFinish), (laneKinds) => runFanIns(ctx, null, laneKinds, settings.fanInLeaseMs));
  const { retentionMs } = settings;
  if (retentionMs !== null && ctx.store.purgeFinished) {
    start('retention', (kind) => Boolean(ctx.definition(kind).onPurge), (laneKinds) => purgeFinished(ctx, settings, retentionMs, laneKinds));
  }
  return started;
}

/** Resolves once the hook lanes running in this process have settled. */
export async function maintenanceHooksIdle(ctx: RuntimeContext): Promise<void> {
  await Promise.all(hookRuns.get(ctx)?.values() ?? []);
}

/** Tables with many dead rows are vacuumed (once a table is done, the other processes find nothing to do). */
async function vacuumTables(ctx: RuntimeContext): Promise<void> {
  const vacuumed = await ctx.store.vacuumTables!();
  if (vacuumed.length > 0) ctx.logger.debug('vacuumed', { tables: vacuumed });
}

/** Items whose holder died (lease lapsed) go back to pending with a fresh job, or fail on their last attempt. */
async function recoverLapsed(ctx: RuntimeContext): Promise<void> {
  const { store } = ctx;
  for (;;) {
    const recovered = await ctx.withEnqueuer((enqueue) => store.recoverLapsedItems(500, enqueue));
    ctx.stats.recoveries.lapsedRequeued += recovered.requeued;
    ctx.stats.recoveries.lapsedFailed += recovered.failed.settled.length;
    if (recovered.requeued > 0 || recovered.failed.settled.length > 0) {
      ctx.logger.info('recovered lapsed items', { requeued: recovered.requeued, failed: recovered.failed.settled.length });
    }
    // A line per item, naming it: which items a dead worker held, and what became of them.
    for (const item of recovered.items ?? []) {
      ctx.logger.info(item.outcome === 'requeued' ? 'a lapsed item goes back to pending' : `a lapsed item ${item.outcome === 'failed' ? 'failed on its last attempt' : 'was cancelled (its task is stopping)'}`, {
        ...itemFields(item),
        recovery: item.outcome,
      });
    }
    ctx.afterSettle(recovered.failed);
    if (recovered.requeued + recovered.failed.settled.length < 500) break;
  }
}

/** Running tasks past their deadline stop. */
async function stopOverdue(ctx: RuntimeContext): Promise<void> {
  const { store } = ctx;
  for (const taskId of await store.overdueTasks(100)) {
    const stopped = await store.stopTask(taskId, 'deadline', 'the task passed its deadline');
    if (stopped?.changed) ctx.logger.info('task passed its deadline', taskFields(stopped.task));
    if (stopped) ctx.announceTask(stopped.task, stopped.changed);
  }
}

/** The error of a task stopped past its failure tolerance. */
export const FAILURE_THRESHOLD_ERROR = 'more items failed than the task tolerates';

/** Idle unfinished tasks: counters recomputed, dead managers, orphaned items, quiet stopping tasks. */
async function reconcileIdle(ctx: RuntimeContext, settings: MaintenanceSettings, maxRunningTasks: number | null): Promise<void> {
  const { store } = ctx;
  for (const taskId of await store.reconcileCandidates(settings.reconcileIdleMs, 100, maxRunningTasks)) {
    const result = await store.reconcile(taskId);
    if (!result) continue;
    if (result.drift.length > 0) {
      ctx.stats.recoveries.countersRepaired++;
      ctx.logger.warn('counters drifted; recomputed from items', { ...taskFields(result.task), drift: result.drift });
    }
    if (result.finished) ctx.announceTask({ ...result.task, finished: true, overFailureLimit: false });
    // A task whose dispatch never ended and whose manager job is gone for good (its process
    // crashed on the last attempt): what was dispatched runs, the rest never will. A stopping one
    // too (cancelled or past its deadline meanwhile): it waits for its dispatch to end, which only
    // its manager did; the stop keeps its reason.
    if (!result.task.dispatched && !isTerminalTaskStatus(result.task.status) && !(await ctx.managerAlive(result.task))) {
      // (A stopping task keeps its reason, and has no error of the manager's to show.)
      const error = result.task.status === 'stopping' ? undefined : 'the manager job ended without finishing the dispatch';
      const stopped = await store.stopTask(taskId, 'manager_failed', error);
      if (stopped) ctx.announceTask(stopped.task, stopped.changed);
      continue;
    }
    // A running task that went quiet with pending items (its tenant's jobs dead-lettered during a
    // database outage, lost with a crashed worker, or deleted by hand): top its tenant's jobs up.
    if (result.task.status === 'running' && result.task.dispatched && (await ctx.requeueOrphans(result.task))) ctx.stats.recoveries.orphansRequeued++;
    // A stopping task that went quiet: cancel (and count) any pending item that a retry or a
    // requeue put back after the stop, so the task can end.
    // (Also one the recomputed counters put past its failure tolerance.)
    if (result.task.status === 'stopping') {
      const reason = result.task.stopReason ?? 'cancelled';
      const stopped = await store.stopTask(taskId, reason, reason === 'failure_threshold' ? FAILURE_THRESHOLD_ERROR : undefined);
      if (stopped) ctx.announceTask(stopped.task);
    }
  }
}

/**
 * A definition whose purge hook failed is left out of this process's retention, and the tasks it
 * failed on are held back from every process's, this long (doubled per failure in a row, up to
 * `PURGE_HOLD_MAX_MS`).
 */
const PURGE_HOLD_MS = 5_000;
const PURGE_HOLD_MAX_MS = 300_000;

/** Per runtime: the definitions whose purge hook failed, until when they are left out, and how many times in a row. */
const purgeHolds = new WeakMap<RuntimeContext, Map<string, { until: number; failures: number }>>();

/**
 * Retention: the items and logs of tasks finished long ago, in bounded batches. Once nothing is
 * left of a batch's tasks, those of definitions with a purge hook are held under a lease (as a
 * fan-in is) while their hook runs, and their purge ends only once it succeeded, by the lease's
 * holder: a hook that fails, or a process that crashes, leaves them under way for a later batch.
 * A definition whose hook failed is left out for a while, so that it does not hold up the others.
 */
async function purgeFinished(ctx: RuntimeContext, settings: MaintenanceSettings, retentionMs: number, kinds: readonly string[]): Promise<void> {
  const started = performance.now();
  let holds = purgeHolds.get(ctx);
  if (!holds) purgeHolds.set(ctx, (holds = new Map()));
  const hooked = new Set(kinds.filter((kind) => ctx.definition(kind).onPurge));
  do {
    const now = Date.now();
    const open = kinds.filter((kind) => (holds.get(kind)?.until ?? 0) <= now);
    if (open.length === 0) break;
    // (The lease is taken only when a batch's definitions have a hook; without, the batch ends the purge.)
    const token = randomUUID();
    const lease = open.some((kind) => hooked.has(kind)) ? { token, ms: settings.fanInLeaseMs } : undefined;
    const purge = await ctx.store.purgeFinished!(retentionMs, PURGE_BATCH, open, lease);
    if (purge.taskId === null) break;
    if (!purge.purged) continue;
    const taskIds = purge.tasks ?? [purge.taskId];
    if (!lease) {
      ctx.logger.info('retention deleted the items of finished tasks', { taskIds });
      continue;
    }
    const byKind = new Map<string, string[]>();
    for (const [i, id] of taskIds.entries()) {
      // (A store that does not say the kinds: each task's is read.)
      const kind = purge.kinds?.[i] ?? (await ctx.store.getTask(id))?.kind;
      if (kind !== undefined) byKind.set(kind, [...(byKind.get(kind) ?? []), id]);
    }
    for (const [kind, ids] of byKind) {
      if (!(await runPurgeHook(ctx, kind, ids, { token, ms: settings.fanInLeaseMs }, holds))) continue;
      const ended = (await ctx.store.finishPurge?.(ids, token)) ?? ids;
      if (ended.length > 0) ctx.logger.info('retention deleted the items of finished tasks', { definition: kind, taskIds: ended });
      if (ended.length < ids.length) ctx.logger.warn('the purge hook ran, but its lease had passed to another process, which runs it again', { definition: kind, taskIds: ids.filter((id) => !ended.includes(id)) });
    }
  } while (performance.now() - started < PURGE_PASS_MS);
}

/**
 * Runs `kind`'s purge hook on tasks held under `lease`, renewing the lease while it runs (its
 * signal aborts when the lease is lost); resolves whether it succeeded (true when there is none).
 * A failure is reported, and holds the tasks back from every process and the definition from this
 * one's retention for a while.
 */
async function runPurgeHook(
  ctx: RuntimeContext,
  kind: string,
  taskIds: string[],
  lease: { token: string; ms: number },
  holds: Map<string, { until: number; failures: number }>,
): Promise<boolean> {
  const definition = ctx.definition(kind);
  if (!definition.onPurge) return true;
  try {
    await withPurgeLease(ctx, taskIds, lease, (signal) => definition.onPurge!(taskIds, { logger: childLogger(ctx.logger, { definition: kind }), signal }));
    holds.delete(kind);
    return true;
  } catch (error) {
    const failures = (holds.get(kind)?.failures ?? 0) + 1;
    const holdMs = Math.min(PURGE_HOLD_MAX_MS, PURGE_HOLD_MS * 2 ** (failures - 1));
    holds.set(kind, { until: Date.now() + holdMs, failures });
    await ctx.store.holdPurge?.(taskIds, lease.token, holdMs).catch(() => {
      // Not held back: the lease lapses on its own.
    });
    ctx.reportError(error, `the purge hook of ${kind}`, { definition: kind, taskIds, retryInMs: holdMs });
    return false;
  }
}

/** Runs `run` while the purge of `taskIds` is held under `lease`, renewed every third of it; its signal aborts when the lease is lost or the runtime stops. */
export async function withPurgeLease(ctx: RuntimeContext, taskIds: readonly string[], lease: { token: string; ms: number }, run: (signal: AbortSignal) => Promise<void> | void): Promise<void> {
  const lost = new AbortController();
  const renew = setInterval(() => {
    ctx.store.holdPurge?.(taskIds, lease.token, lease.ms).then(
      (held) => {
        if (held.length < taskIds.length) lost.abort(new FanoutError('aborted', `the purge lease of tasks ${taskIds.join(', ')} was lost`));
      },
      () => {
        // A failed renewal is tried again at the next tick; the lease covers two missed ones.
      },
    );
  }, Math.max(100, Math.floor(lease.ms / 3)));
  renew.unref();
  try {
    await run(AbortSignal.any([ctx.shutdown, lost.signal]));
  } finally {
    clearInterval(renew);
  }
}

/**
 * Runs the fan-in hook of finished tasks (one task when `taskId` is given), each under a lease
 * held with an owner token and renewed while the hook runs, so exactly one process runs it per
 * round: a process that stalls past the lease loses it (its hook's signal aborts, and it cannot
 * complete the round), and a failed or crashed run is retried by a later maintenance pass.
 */
export async function runFanIns(ctx: RuntimeContext, taskId: string | null, kinds: readonly string[], leaseMs: number): Promise<void> {
  for (;;) {
    const token = randomUUID();
    const task = await ctx.store.claimFanIn(taskId, kinds, leaseMs, token);
    if (!task) return;
    const ran = await runClaimedFanIn(ctx, task, token, leaseMs, () => ctx.store.completeFanIn(task.id, task.round, token));
    if (!ran || taskId) return;
  }
}

/**
 * Runs the hook of a fan-in this process claimed under `token`, renewing the lease while it runs,
 * then records the round through `complete`; a failed hook gives the lease up so that a later
 * pass tries again. Resolves false when the hook failed.
 */
export async function runClaimedFanIn(ctx: RuntimeContext, task: TaskRecord, token: string, leaseMs: number, complete: () => Promise<boolean>): Promise<boolean> {
  const definition = ctx.definition(task.kind);
  const lost = new AbortController();
  const renew = setInterval(() => {
    ctx.store.renewFanIn(task.id, token, leaseMs).then(
      (held) => {
        if (!held) lost.abort(new FanoutError('aborted', `the fan-in lease of task ${task.id} was lost`));
      },
      () => {
        // A failed renewal is tried again at the next tick; the lease covers two missed ones.
      },
    );
  }, Math.max(100, Math.floor(leaseMs / 3)));
  renew.unref();
  try {
    const logger = childLogger(ctx.logger, { ...taskFields(task), round: task.round });
    await ctx.telemetry.fanIn(task, async () => definition.onFinish?.(task, { logger, signal: AbortSignal.any([ctx.shutdown, lost.signal]) }));
    clearInterval(renew);
    if (!(await complete())) {
      ctx.logger.warn('the fan-in ran, but its lease had passed to another process, which runs it again', { ...taskFields(task), round: task.round });
    }
    return true;
  } catch (error) {
    clearInterval(renew);
    // A PermanentError says that trying again cannot help (what the hook needs is gone): the round
    // is recorded as done, once, and said; anything else is tried again by a later pass.
    if (error instanceof PermanentError) {
      ctx.logger.error('fan-in hook failed for good (a PermanentError); it is not run again for this round', { ...taskFields(task), round: task.round, ...errorFields(error) });
      ctx.reportError(error, `fan-in of task ${task.id}`, taskFields(task));
      // (Not recorded, the store out of reach: a later pass runs the hook again.)
      const recorded = await complete().catch((failure: unknown) => {
        ctx.reportError(failure, `recording the fan-in of task ${task.id}`, taskFields(task));
        return true;
      });
      if (!recorded) ctx.logger.warn('the fan-in ran, but its lease had passed to another process, which runs it again', { ...taskFields(task), round: task.round });
      return true;
    }
    ctx.logger.error('fan-in hook failed; it will be retried', { ...taskFields(task), round: task.round, ...errorFields(error) });
    await ctx.store.releaseFanIn(task.id, token, Math.min(leaseMs, 30_000));
    ctx.reportError(error, `fan-in of task ${task.id}`, taskFields(task));
    return false;
  }
}

/**
 * Announces the endings that were never recorded as announced (their process died between the
 * commit and the announcement, or the broadcast failed), a while after they happened.
 */
export async function announceMissedEndings(ctx: RuntimeContext, kinds: readonly string[], settings: MaintenanceSettings): Promise<void> {
  // A short claim: if this process cannot deliver (its broadcast is broken), another takes over soon.
  const due = await ctx.store.claimUnannounced(kinds, settings.announceGraceMs, 10_000, 100);
  for (const task of due) {
    ctx.logger.warn('announcing an ending that was not announced', { ...taskFields(task), status: task.status, round: task.round });
    await ctx.announceEnding(task);
  }
}
