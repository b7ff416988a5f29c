// Controls: stop (cancel, deadline, failure tolerance, failed manager) and retry-failed. Both take
// the task row FOR UPDATE first, so they are ordered against each other and against releases and
// lapsed-lease recovery (which share-lock it), and both move the items and the counters in the
// same transaction: a stop cancels every pending item and adds as many to `cancelled` in one
// statement; a retry puts the failed items back to pending and takes as many off `failed`.
import { FanoutError, type EnqueueWork, type RetryFailedOptions, type RetryFailedResult, type StopReason, type StopResult, type TaskRecord } from '@fanout/core';
import { executor } from '../executor.ts';
import type { PrismaQueryable } from '../prisma-like.ts';
import { isTerminalStatus, toSettled, toTask, type TaskRow } from '../rows.ts';
import { lockTask } from './reads.ts';

/**
 * Stops a queued or running task in `tx`: status `stopping` with a reason, every pending item
 * cancelled and counted, and the task finished at once when nothing is left running. Null when
 * the task does not exist; `changed: false` when it was already stopping or finished.
 */
export async function stopTask(tx: PrismaQueryable, taskId: string, reason: StopReason, error?: string): Promise<StopResult | null> {
  const current = await lockTask(tx, taskId);
  if (!current) return null;
  if (isTerminalStatus(current.status)) {
    return { changed: false, cancelledItems: 0, task: toSettled(current, true) };
  }
  // The settle that passed the tolerance made the task stopping, and its stop follows; one that
  // finds the task running again (retried since, a new round) was asked for by the last round.
  if (reason === 'failure_threshold' && !(current.status === 'stopping' && current.stop_reason === 'failure_threshold')) {
    return { changed: false, cancelledItems: 0, task: toSettled(current) };
  }
  // The maintenance loop decides the other automatic stops on an earlier read: each must still
  // hold under the lock. A manager's failure, only while the dispatch has not ended (a manager that
  // finished just after the read did not fail); a deadline, only once passed (a task retried just
  // after the read runs a new round, with a deadline of its own).
  if (current.status === 'running' && reason === 'manager_failed' && current.dispatched_at !== null) {
    return { changed: false, cancelledItems: 0, task: toSettled(current) };
  }
  if (current.status === 'running' && reason === 'deadline') {
    const [due] = await tx.$queryRaw<{ passed: boolean }[]>`SELECT deadline_at IS NOT NULL AND deadline_at <= now() AS passed FROM fanout_task WHERE id = ${taskId}::uuid`;
    if (!due?.passed) return { changed: false, cancelledItems: 0, task: toSettled(current) };
  }
  const changed = current.status !== 'stopping';
  // Its ready rows go first (a claim holding some is waited for: what it took runs, and is stopped
  // on its worker), then its pending items are cancelled: the same lock order as a claim's.
  await tx.$queryRaw`DELETE FROM fanout_ready WHERE task_id = ${taskId}::uuid RETURNING 1 AS gone`;
  // A queued task has no items and no manager yet: its (empty) dispatch is over.
  const [row] = await tx.$queryRaw<(TaskRow & { cancelled_items: number })[]>`
    WITH c AS (
      UPDATE fanout_item SET status = 'cancelled', finished_at = clock_timestamp()
      WHERE task_id = ${taskId}::uuid AND status = 'pending'
      RETURNING 1
    ), n AS (SELECT count(*)::int AS k FROM c)
    UPDATE fanout_task t SET
      stop_reason = COALESCE(t.stop_reason, ${reason}::text),
      error = COALESCE(t.error, ${error ?? null}::text),
      -- A queued task has no items yet; a failed manager will dispatch no more: either way
      -- the dispatch is over and the total is final.
      dispatched_at = CASE WHEN t.status = 'queued' OR ${reason}::text = 'manager_failed' THEN COALESCE(t.dispatched_at, now()) ELSE t.dispatched_at END,
      dispatch_cut = t.dispatch_cut OR (t.dispatched_at IS NULL AND (t.status = 'queued' OR ${reason}::text = 'manager_failed')),
      cancelled = t.cancelled + n.k,
      updated_at = now(),
      status = fanout_next_status('stopping', COALESCE(t.stop_reason, ${reason}::text),
                                  t.status = 'queued' OR ${reason}::text = 'manager_failed' OR t.dispatched_at IS NOT NULL,
                                  t.succeeded + t.failed + t.cancelled + n.k, t.total),
      completed_at = CASE WHEN fanout_next_status('stopping', COALESCE(t.stop_reason, ${reason}::text),
                                  t.status = 'queued' OR ${reason}::text = 'manager_failed' OR t.dispatched_at IS NOT NULL,
                                  t.succeeded + t.failed + t.cancelled + n.k, t.total) <> 'stopping'
                          THEN now() ELSE t.completed_at END
    FROM n WHERE t.id = ${taskId}::uuid
    RETURNING t.*, n.k AS cancelled_items`;
  return { changed, cancelledItems: row!.cancelled_items, task: toSettled(row!) };
}

/**
 * Re-opens a finished (`completed` or `failed`) task in `tx`: its failed items (all, the
 * retryable ones, or the given ones), and the items its stop cancelled before they ran (a stop by
 * its failure tolerance or its deadline), go back to pending for a new round; the counters lose as
 * many, the round's start is recorded, and their jobs are enqueued. A task whose dispatch was cut
 * short (its manager failed, or it stopped while its items were being listed) is a conflict: its
 * items were never all listed, so it is submitted again.
 */
export async function retryFailedItems(tx: PrismaQueryable, taskId: string, enqueue: EnqueueWork, options: RetryFailedOptions): Promise<RetryFailedResult> {
  const task = await lockTask(tx, taskId);
  if (!task) throw new FanoutError('not_found', `task ${taskId} does not exist`, { field: 'taskId' });
  if (task.status !== 'completed' && task.status !== 'failed') {
    throw new FanoutError('conflict', `task ${taskId} is ${task.status}; only a completed or failed task can retry its failed items`, { field: 'taskId' });
  }
  // Read under the task's lock, which a retention batch holds while it deletes: once one has begun
  // on the task, its items are going, and a retry would reopen a task with none left to run.
  if (task.purged_at) {
    throw new FanoutError('conflict', `task ${taskId}: its items were deleted by retention or by a delete (${task.purged_at.toISOString()}); submit it again`, { field: 'taskId' });
  }
  // A dispatch cut short never listed every item: re-running a part would end the task
  // "completed" with items that never existed. The task is submitted again instead.
  if (task.dispatch_cut) {
    const why = task.stop_reason === 'manager_failed' ? (task.error ?? 'its manager failed') : `stopped by ${task.stop_reason === 'failure_threshold' ? 'its failure tolerance' : task.stop_reason}`;
    throw new FanoutError('conflict', `task ${taskId} stopped before all its items were listed (${why}); submit it again instead of retrying it`, { field: 'taskId' });
  }
  // A task stopped by its failure tolerance or its deadline cancelled the items it had not run:
  // they never ran, so a retry runs them too (a cancel by a person is final, and cannot be retried).
  const withStopped = task.stop_reason === 'failure_threshold' || task.stop_reason === 'deadline';
  // Each item once, as the database spells it: an id named twice (or spelled two ways) is one item.
  const only = options.itemIds
    ? (await tx.$queryRaw<{ ids: string[] }[]>`SELECT COALESCE(array_agg(DISTINCT x)::text[], '{}') AS ids FROM unnest(${[...options.itemIds]}::uuid[]) AS x`)[0]!.ids
    : null;
  const retryableOnly = options.retryableOnly ?? false;
  const round = task.round + 1;
  await awaitEnding(tx, task, { retryableOnly, withStopped, only });
  const items = await tx.$queryRaw<{ id: string; was: string }[]>`
    WITH back AS (
      -- (A new round starts its items' times afresh: an item's duration is its round's.)
      UPDATE fanout_item i SET status = 'pending', attempts = 0, round = ${round}::int, result = NULL,
        claim_token = NULL, started_at = NULL, finished_at = NULL, retry_at = NULL
      FROM (SELECT id, status AS was FROM fanout_item
            WHERE task_id = ${taskId}::uuid
              AND ((status = 'failed' AND (${retryableOnly}::boolean = false OR (error->>'retryable')::boolean IS TRUE))
                   OR (${withStopped}::boolean AND status = 'cancelled'))
              AND (${only}::uuid[] IS NULL OR id = ANY(${only}::uuid[]))
            FOR UPDATE) r
      WHERE i.id = r.id
      RETURNING i.id, i.seq, r.was
    ), ready AS (
      INSERT INTO fanout_ready (task_id, seq, item_id) SELECT ${taskId}::uuid, seq, id FROM back ON CONFLICT DO NOTHING
    )
    SELECT id, was FROM back`;
  if (only && items.length < only.length) {
    // An id that is no item of this task is missing (404); one that is, is not failed (409).
    const retried = new Set(items.map((i) => i.id));
    const left = only.filter((id) => !retried.has(id));
    const known = new Set(
      (await tx.$queryRaw<{ id: string }[]>`SELECT id::text FROM fanout_item WHERE task_id = ${taskId}::uuid AND id = ANY(${left}::uuid[])`).map((r) => r.id),
    );
    const unknown = left.find((id) => !known.has(id));
    if (unknown) throw new FanoutError('not_found', `item ${unknown} is not an item of task ${taskId}`, { field: 'itemId' });
    const what = items.length === 0 && only.length > 1 ? `none of the given items is a failed item of task ${taskId}` : `item ${left[0]} is not a failed item of task ${taskId}`;
    throw new FanoutError('conflict', what, { field: 'itemId' });
  }
  if (items.length === 0) {
    throw new FanoutError('conflict', retryableOnly ? `task ${taskId} has no retryable failed items` : `task ${taskId} has no failed items to retry`, { field: 'taskId' });
  }
  const failedBack = items.filter((i) => i.was === 'failed').length;
  const cancelledBack = items.length - failedBack;
  const [row] = await tx.$queryRaw<TaskRow[]>`
    UPDATE fanout_task SET failed = failed - ${failedBack}::int, cancelled = cancelled - ${cancelledBack}::int,
      status = 'running', stop_reason = NULL, error = NULL,
      completed_at = NULL, round = ${round}::int, deadline_at = ${options.deadlineAt ?? null}::timestamptz,
      round_started_at = now(), round_settled_at_start = succeeded + failed + cancelled - ${items.length}::int, updated_at = now(),
      -- A failed fan-in's wait before its next try was for the round that ended: the new round's
      -- fan-in does not wait for it (one running keeps its lease).
      fanin_lease_until = CASE WHEN fanin_token IS NULL THEN NULL ELSE fanin_lease_until END,
      trace = COALESCE(${options.trace ? JSON.stringify(options.trace) : null}::jsonb, trace)
    WHERE id = ${taskId}::uuid
    RETURNING *`;
  await enqueue(executor(tx), [{ taskId, kind: task.kind, tenant: task.tenant }]);
  return { retried: items.length, task: toTask(row!) };
}

/**
 * How long after a task ended a retry waits for that round's ending (`awaitEnding`): past it, an
 * ending still undelivered or a fan-in still failing gives way to the new round's.
 */
export const ENDING_WAIT_MS = 60_000;

/**
 * The round that ended is announced and its fan-in run once each, and both are taken up only while
 * the task is still as that round left it (a fan-in already running completes whatever happens).
 * A new round begun first would take their place: that round's ending would never be delivered,
 * nor its fan-in run. So, for a minute after the end, a retry is refused while either is still to
 * come: a conflict that passes (`retryAfterMs`), which the runtime waits out. Later, an ending the
 * maintenance loop still could not deliver, or a fan-in hook still failing, no longer holds the
 * task back: the new round's ending and fan-in take their place.
 */
async function awaitEnding(tx: PrismaQueryable, task: TaskRow, which: { retryableOnly: boolean; withStopped: boolean; only: string[] | null }): Promise<void> {
  // Read from the locked row first: with the ending delivered (nearly always), no statement.
  const ending = task as TaskRow & { announced_round: number; fanin_round: number; fanin_token: string | null };
  if (ending.announced_round >= task.round && (ending.fanin_round >= task.round || ending.fanin_token !== null)) return;
  // Only when there is something to retry (the items `retryFailedItems` takes, read the same way):
  // a retry that will be refused for good is told so at once, and a refusal that passes costs one
  // indexed look, not a rewrite of the items rolled back.
  const [row] = await tx.$queryRaw<{ announce: boolean; fan_in: boolean; wait_ms: number; any: boolean }[]>`
    SELECT announced_round < round AS announce, fanin_round < round AND fanin_token IS NULL AS fan_in,
           GREATEST(0, extract(epoch FROM completed_at + ${ENDING_WAIT_MS}::int * interval '1 millisecond' - now()) * 1000)::int AS wait_ms,
           EXISTS (SELECT 1 FROM fanout_item
                   WHERE task_id = ${task.id}::uuid
                     AND ((status = 'failed' AND (${which.retryableOnly}::boolean = false OR (error->>'retryable')::boolean IS TRUE))
                          OR (${which.withStopped}::boolean AND status = 'cancelled'))
                     AND (${which.only}::uuid[] IS NULL OR id = ANY(${which.only}::uuid[]))) AS any
    FROM fanout_task WHERE id = ${task.id}::uuid`;
  if (!row || !(row.announce || row.fan_in) || row.wait_ms <= 0 || !row.any) return;
  const pending = row.announce ? 'its ending is still being announced' : 'its fan-in has not run yet';
  throw new FanoutError('conflict', `task ${task.id} has just ended and ${pending}; try again in a moment`, {
    field: 'taskId',
    retryAfterMs: Math.min(row.wait_ms, 1000),
  });
}

/** Marks a finished task archived (again: a no-op); a `conflict` while it runs. */
export async function archiveTask(db: PrismaQueryable, taskId: string): Promise<TaskRecord> {
  const [row] = await db.$queryRaw<TaskRow[]>`
    UPDATE fanout_task SET archived_at = COALESCE(archived_at, now())
    WHERE id = ${taskId}::uuid AND status IN ('completed', 'failed', 'cancelled')
    RETURNING *`;
  if (row) return toTask(row);
  return unfinishedOrMissing(db, taskId, 'archived');
}

/** Rows (log lines, then items) one statement of a delete removes at most. */
const DELETE_BATCH = 2000;

/**
 * Deletes a finished task with its items and logs, a bounded batch per statement (a 100,000-item
 * task is not one statement's work, nor one transaction's): the task is marked first (`purged_at`:
 * its details answer as gone and it is never retried from then on; `purging`: retention, when set,
 * finishes a delete cut short), then its log lines and items go, then its row (with what a last
 * log line or ready row left behind, through the foreign keys). Refused, as `deleteRefusal` says,
 * while its ending or its fan-in is still to come.
 */
export async function deleteTask(db: PrismaQueryable, taskId: string): Promise<void> {
  const marked = await db.$queryRaw<{ id: string }[]>`
    UPDATE fanout_task SET purged_at = coalesce(purged_at, now()), purging = true
    WHERE id = ${taskId}::uuid AND status IN ('completed', 'failed', 'cancelled')
      -- (as deleteRefusal reads it)
      AND ((announced_round >= round AND fanin_round >= round)
           OR coalesce(completed_at, updated_at) < now() - ${ENDING_WAIT_MS}::int * interval '1 millisecond')
      -- (a fan-in runs: held under a token; a failed one's back-off has none, and is "still to come")
      AND (fanin_round >= round OR fanin_token IS NULL OR fanin_lease_until IS NULL OR fanin_lease_until < clock_timestamp())
    RETURNING id`;
  if (marked.length === 0) throw await deleteRefusal(db, taskId, false);
  for (;;) {
    const [logs] = await db.$queryRaw<{ n: number }[]>`
      WITH gone AS (DELETE FROM fanout_item_log WHERE id IN (SELECT id FROM fanout_item_log WHERE task_id = ${taskId}::uuid LIMIT ${DELETE_BATCH}::int) RETURNING 1)
      SELECT count(*)::int AS n FROM gone`;
    const [items] = await db.$queryRaw<{ n: number }[]>`
      WITH gone AS (DELETE FROM fanout_item WHERE id IN (SELECT id FROM fanout_item WHERE task_id = ${taskId}::uuid LIMIT ${DELETE_BATCH}::int) RETURNING 1)
      SELECT count(*)::int AS n FROM gone`;
    if (logs!.n < DELETE_BATCH && items!.n < DELETE_BATCH) break;
  }
  // (Gone already when another delete of it finished first: deleted all the same.)
  await db.$queryRaw`
    WITH gone AS (DELETE FROM fanout_task WHERE id = ${taskId}::uuid RETURNING id),
    ready AS (DELETE FROM fanout_ready WHERE task_id IN (SELECT id FROM gone))
    SELECT id FROM gone`;
}

/**
 * Why a task cannot be deleted (or marked for it, `markPurged`) now: it does not exist; it has not
 * finished; another process's purge holds it (`held`: asked by `markPurged`); or its ending is still
 * to come. The ending that was announced and the fan-in that ran are the last of a task's life: a
 * delete before them would leave the ending undelivered, and the fan-in's app state never written
 * (a load left loading) or written after the app's purge hook deleted the rest. So a delete waits
 * (a conflict that passes, `retryAfterMs`, which the runtime waits out) for a fan-in that runs now,
 * and, for a minute after the end at most (as a retry does, see `awaitEnding`), for an ending still
 * to be announced or a fan-in still to be taken up.
 */
export async function deleteRefusal(db: PrismaQueryable, taskId: string, held: boolean): Promise<FanoutError> {
  const [task] = await db.$queryRaw<{ status: string; purging: boolean; purge_ms: number | null; fan_in_ms: number | null; announce: boolean; fan_in: boolean; wait_ms: number }[]>`
    SELECT status, purging, ceil(extract(epoch FROM purge_lease_until - clock_timestamp()) * 1000)::int AS purge_ms,
           CASE WHEN fanin_round < round AND fanin_token IS NOT NULL THEN ceil(extract(epoch FROM fanin_lease_until - clock_timestamp()) * 1000)::int END AS fan_in_ms,
           announced_round < round AS announce, fanin_round < round AS fan_in,
           GREATEST(0, extract(epoch FROM coalesce(completed_at, updated_at) + ${ENDING_WAIT_MS}::int * interval '1 millisecond' - now()) * 1000)::int AS wait_ms
    FROM fanout_task WHERE id = ${taskId}::uuid`;
  if (!task) return new FanoutError('not_found', `task ${taskId} does not exist`, { field: 'taskId' });
  if (!['completed', 'failed', 'cancelled'].includes(task.status)) {
    return new FanoutError('conflict', `task ${taskId} is ${task.status}; only a finished task can be deleted`, { field: 'taskId' });
  }
  if (task.fan_in_ms !== null && task.fan_in_ms > 0) {
    return new FanoutError('conflict', `task ${taskId}: its fan-in is running; try again once it has run`, { field: 'taskId', retryAfterMs: Math.max(1000, task.fan_in_ms) });
  }
  if ((task.announce || task.fan_in) && task.wait_ms > 0) {
    const pending = task.announce ? 'its ending is still being announced' : 'its fan-in has not run yet';
    return new FanoutError('conflict', `task ${taskId} has just ended and ${pending}; try again in a moment`, { field: 'taskId', retryAfterMs: Math.max(100, Math.min(task.wait_ms, 1000)) });
  }
  if (held && task.purging) {
    // Again once the other process's lease on the purge runs out, at the latest (a second at least).
    return new FanoutError('conflict', `task ${taskId}: its details are being deleted by another process; try again in a moment`, {
      field: 'taskId',
      retryAfterMs: Math.max(1000, task.purge_ms ?? 0),
    });
  }
  // (It changed between the two statements.)
  return new FanoutError('conflict', `task ${taskId} changed meanwhile; try again`, { field: 'taskId', retryAfterMs: 100 });
}

async function unfinishedOrMissing(db: PrismaQueryable, taskId: string, what: string): Promise<never> {
  const [task] = await db.$queryRaw<{ status: string }[]>`SELECT status FROM fanout_task WHERE id = ${taskId}::uuid`;
  if (!task) throw new FanoutError('not_found', `task ${taskId} does not exist`, { field: 'taskId' });
  throw new FanoutError('conflict', `task ${taskId} is ${task.status}; only a finished task can be ${what}`, { field: 'taskId' });
}
