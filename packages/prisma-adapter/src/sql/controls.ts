// Controls: stop (cancel, deadline, failure tolerance, failed manager) and retry-failed. Both take
// the task row FOR UPDATE first, so they are ordered against each other and against releases and
// lapsed-lease recovery (which share-lock it), and both move the items and the counters in the
// same transaction: a stop cancels every pending item and adds as many to `cancelled` in one
// statement; a retry puts the failed items back to pending and takes as many off `failed`.
import { FanoutError, type EnqueueItems, type RetryFailedResult, type StopReason, type StopResult } from '@fanout/core';
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
  const changed = current.status !== 'stopping';
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
 * Re-opens a finished (`completed` or `failed`) task in `tx`: its failed items go back to pending
 * for a new round, `failed` is reduced by as many, and their jobs are enqueued.
 */
export async function retryFailedItems(
  tx: PrismaQueryable,
  taskId: string,
  enqueue: EnqueueItems,
  options: { deadlineAt?: Date | null },
): Promise<RetryFailedResult> {
  const task = await lockTask(tx, taskId);
  if (!task) throw new FanoutError('not_found', `task ${taskId} does not exist`, { field: 'taskId' });
  if (task.status !== 'completed' && task.status !== 'failed') {
    throw new FanoutError('conflict', `task ${taskId} is ${task.status}; only a completed or failed task can retry its failed items`);
  }
  if (task.failed === 0) throw new FanoutError('conflict', `task ${taskId} has no failed items to retry`);
  const round = task.round + 1;
  const items = await tx.$queryRaw<{ id: string }[]>`
    UPDATE fanout_item SET status = 'pending', attempts = 0, round = ${round}::int, result = NULL,
      claim_token = NULL, lease_until = NULL, finished_at = NULL
    WHERE task_id = ${taskId}::uuid AND status = 'failed'
    RETURNING id`;
  const [row] = await tx.$queryRaw<TaskRow[]>`
    UPDATE fanout_task SET failed = failed - ${items.length}::int, status = 'running', stop_reason = NULL, error = NULL,
      completed_at = NULL, round = ${round}::int, deadline_at = ${options.deadlineAt ?? null}::timestamptz, updated_at = now()
    WHERE id = ${taskId}::uuid
    RETURNING *`;
  await enqueue(executor(tx), items.map((i) => ({ id: i.id, taskId, kind: task.kind })));
  return { retried: items.length, task: toTask(row!) };
}
