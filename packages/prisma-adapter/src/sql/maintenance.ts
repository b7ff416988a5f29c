// Maintenance: the statements behind the maintenance loop's steps (recover lapsed claims, find
// overdue tasks, reconcile idle tasks). Any number of processes run the loop at once, so each step
// is safe to run concurrently: lapsed claims are taken FOR UPDATE SKIP LOCKED (two passes split
// them instead of both handling one) and their items then only changed under their lock; a
// reconcile holds the task row FOR UPDATE while it recomputes the counters from the item rows (the
// truth); the candidate queries only read.
import type { EnqueueWork, Outcome, ReconcileResult, RecoverResult } from '@fanout/core';
import { executor } from '../executor.ts';
import type { PrismaQueryable } from '../prisma-like.ts';
import { isTerminalStatus, toSettled, type TaskRow } from '../rows.ts';
import { lockTask } from './reads.ts';
import { settleAndIncrement } from './settle.ts';

/** Lapsed claims one recovery takes at most, whatever their size. */
const CLAIMS_PER_RECOVERY = 200;

/**
 * The items of claims whose lease lapsed (their holder died), up to about `limit`, in `tx`: back to
 * pending (their tasks' work enqueued) while they have attempts left and their task runs, else
 * settled as failed (out of attempts) or cancelled (their task is stopping), through the same
 * atomic increment as a child's settle; then the claims are gone. The lapsed claims are found in
 * the table of claims in flight: a task's items are only read by id, those of the claims taken.
 */
export async function recoverLapsedItems(tx: PrismaQueryable, limit: number, enqueue: EnqueueWork): Promise<RecoverResult> {
  // The oldest lapsed claims, as many as hold about `limit` items; locked SKIP LOCKED, so two
  // passes take different ones, and a worker renewing one (it is alive after all) keeps it.
  const claims = await tx.$queryRaw<{ rid: string }[]>`
    SELECT c.ctid::text AS rid FROM fanout_claim c
    WHERE c.ctid = ANY(ARRAY(
      SELECT ctid FROM (
        SELECT ctid, sum(cardinality(item_ids)) OVER (ORDER BY lease_until, token) - cardinality(item_ids) AS before
        FROM fanout_claim WHERE lease_until < statement_timestamp()
        ORDER BY lease_until, token
        LIMIT ${CLAIMS_PER_RECOVERY}::int
      ) l WHERE l.before < ${limit}::int))
      AND c.lease_until < clock_timestamp()
    FOR UPDATE SKIP LOCKED`;
  if (claims.length === 0) return { requeued: 0, failed: { settled: [], tasks: [] } };
  const rids = claims.map((c) => c.rid);
  // Their items still running under them (an item settled, released or taken over since is not).
  const lapsed = await tx.$queryRaw<
    { id: string; task_id: string; seq: number; kind: string; tenant: string | null; claim_token: string; attempts: number; max_attempts: number; task_status: string }[]
  >`
    SELECT i.id, i.task_id, i.seq, t.kind, t.tenant, i.claim_token, i.attempts, t.max_attempts, t.status AS task_status
    FROM fanout_claim c CROSS JOIN LATERAL unnest(c.item_ids) x(id)
    JOIN fanout_item i ON i.id = x.id JOIN fanout_task t ON t.id = i.task_id
    WHERE c.ctid = ANY(${rids}::tid[]) AND i.claim_token = c.token AND i.status = 'running' AND t.status IN ('running', 'stopping')
    ORDER BY i.id
    FOR UPDATE OF i`;
  let requeued = 0;
  let failed: RecoverResult['failed'] = { settled: [], tasks: [] };
  const items: NonNullable<RecoverResult['items']> = [];
  if (lapsed.length > 0) {
    // Re-read the tasks' status under a share lock, for the same reason as in releaseClaims.
    const running = new Set(
      (
        await tx.$queryRaw<{ id: string }[]>`
          SELECT id FROM fanout_task WHERE id = ANY(${[...new Set(lapsed.map((r) => r.task_id))]}::uuid[]) AND status = 'running'
          ORDER BY id FOR KEY SHARE`
      ).map((r) => r.id),
    );
    for (const r of lapsed) r.task_status = running.has(r.task_id) ? 'running' : 'stopped';
    const requeue = lapsed.filter((r) => r.task_status === 'running' && r.attempts < r.max_attempts);
    const settle: Outcome[] = lapsed
      .filter((r) => !requeue.includes(r))
      .map((r) =>
        r.task_status === 'running'
          ? {
              itemId: r.id,
              token: r.claim_token,
              status: 'failed' as const,
              error: { code: 'lease_lapsed', message: `the worker of attempt ${r.attempts} (the last) stopped renewing its claim`, attempt: r.attempts, retryable: true },
            }
          : { itemId: r.id, token: r.claim_token, status: 'cancelled' as const },
      );
    if (requeue.length > 0) {
      await tx.$queryRaw`
        WITH back AS (
          UPDATE fanout_item SET status = 'pending', claim_token = NULL,
            error = jsonb_build_object('code', 'lease_lapsed', 'message', 'the worker holding this item stopped renewing its claim', 'attempt', attempts)
          WHERE id = ANY(${requeue.map((r) => r.id)}::uuid[])
          RETURNING id, task_id, seq
        )
        -- Due from now: the queue-wait histogram measures from here, not from the round's start.
        INSERT INTO fanout_ready (task_id, seq, item_id, due_at) SELECT task_id, seq, id, clock_timestamp() FROM back ON CONFLICT DO NOTHING
        RETURNING item_id`;
      const tasks = new Map(requeue.map((r) => [r.task_id, { taskId: r.task_id, kind: r.kind, tenant: r.tenant }]));
      await enqueue(executor(tx), [...tasks.values()]);
      requeued = requeue.length;
    }
    if (settle.length > 0) failed = await settleAndIncrement(tx, settle);
    // What became of each, for the log lines that name it (a settle the statement skipped did not happen).
    const recovered = (r: (typeof lapsed)[number], outcome: 'requeued' | 'failed' | 'cancelled') => ({ kind: r.kind, taskId: r.task_id, itemId: r.id, attempt: r.attempts, outcome });
    const stored = new Set(failed.settled);
    const byId = new Map(lapsed.map((r) => [r.id, r]));
    items.push(...requeue.map((r) => recovered(r, 'requeued')));
    for (const o of settle) if (stored.has(o.itemId)) items.push(recovered(byId.get(o.itemId)!, o.status as 'failed' | 'cancelled'));
  }
  await tx.$queryRaw`DELETE FROM fanout_claim WHERE ctid = ANY(${rids}::tid[]) RETURNING 1 AS gone`;
  return { requeued, failed, items };
}

/**
 * Whether any claim has lapsed (read through the same index as `recoverLapsedItems`, without
 * locking). Compared with `statement_timestamp()`, which is stable within the statement, so the
 * comparison is a bound of the lease index's scan: the scan reads only the entries of leases that
 * have passed. With `clock_timestamp()` (volatile) it was a filter, so the look read the whole
 * claim table, dead rows included (every claim is a row inserted, renewed and deleted): 632 pages
 * and 1.2 ms with 2,400 dead claims of 100 items, against 2 pages and 0.02 ms through the index.
 */
export async function anyLapsedItem(db: PrismaQueryable): Promise<boolean> {
  const [row] = await db.$queryRaw<{ any: boolean }[]>`
    SELECT EXISTS (SELECT 1 FROM fanout_claim WHERE lease_until < statement_timestamp()) AS any`;
  return row?.any ?? false;
}

/** See `FanoutStore.pendingWork`: read through the task's ready rows. */
export async function pendingWork(db: PrismaQueryable, taskId: string): Promise<{ now: boolean; nextRetryAt: Date | null }> {
  const [row] = await db.$queryRaw<{ now: boolean; next: Date | null }[]>`
    SELECT (SELECT true FROM fanout_ready WHERE task_id = ${taskId}::uuid AND (due_at IS NULL OR due_at <= clock_timestamp())
            ORDER BY seq LIMIT 1) IS NOT NULL AS now,
           (SELECT min(due_at) FROM fanout_ready WHERE task_id = ${taskId}::uuid AND due_at > clock_timestamp()) AS next`;
  return { now: row!.now, nextRetryAt: row!.next };
}

/** Up to `limit` running tasks past their deadline, the longest overdue first. */
export async function overdueTasks(db: PrismaQueryable, limit: number): Promise<string[]> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    SELECT id FROM fanout_task WHERE status = 'running' AND deadline_at < now() ORDER BY deadline_at LIMIT ${limit}::int`;
  return rows.map((r) => r.id);
}

/**
 * Reconcile, in `tx`: recomputes the task's counters from its item rows under the task's row lock,
 * and finishes the task when every item is settled. Null when the task does not exist; a task
 * whose items retention deleted keeps its counters.
 */
export async function reconcileTask(tx: PrismaQueryable, taskId: string): Promise<ReconcileResult | null> {
  const before = await lockTask(tx, taskId);
  if (!before) return null;
  // Retention deleted its items (or is deleting them): its counters are all that is left of them.
  if (before.purged_at !== null) return { taskId, drift: [], finished: false, task: toSettled(before, true) };
  const [counts] = await tx.$queryRaw<{ total: number; succeeded: number; failed: number; cancelled: number }[]>`
    SELECT count(*)::int AS total,
           count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded,
           count(*) FILTER (WHERE status = 'failed')::int AS failed,
           count(*) FILTER (WHERE status = 'cancelled')::int AS cancelled
    FROM fanout_item WHERE task_id = ${taskId}::uuid`;
  const c = counts!;
  // The failure tolerance as a settle applies it: counters set right may pass it.
  const settledCount = c.succeeded + c.failed + c.cancelled;
  const [after] = await tx.$queryRaw<TaskRow[]>`
    UPDATE fanout_task SET total = ${c.total}::int, succeeded = ${c.succeeded}::int, failed = ${c.failed}::int,
      cancelled = ${c.cancelled}::int, updated_at = now(),
      -- (A finished task keeps its reason: only an unfinished one is stopped.)
      stop_reason = CASE WHEN status IN ('running', 'stopping')
                         THEN fanout_next_stop_reason(stop_reason,
                                fanout_over_limit(${c.failed}::int, ${c.total}::int, dispatched_at IS NOT NULL, max_failures, max_failure_ratio))
                         ELSE stop_reason END,
      status = fanout_next_status(status, stop_reason, dispatched_at IS NOT NULL, ${settledCount}::int, ${c.total}::int,
                 fanout_over_limit(${c.failed}::int, ${c.total}::int, dispatched_at IS NOT NULL, max_failures, max_failure_ratio)),
      -- Set when it finishes here (not when it is only stopping).
      completed_at = CASE WHEN status NOT IN ('completed', 'failed', 'cancelled')
                           AND fanout_next_status(status, stop_reason, dispatched_at IS NOT NULL, ${settledCount}::int, ${c.total}::int,
                                 fanout_over_limit(${c.failed}::int, ${c.total}::int, dispatched_at IS NOT NULL, max_failures, max_failure_ratio))
                               IN ('completed', 'failed', 'cancelled')
                          THEN now() ELSE completed_at END
    WHERE id = ${taskId}::uuid
    RETURNING *`;
  const drift: ReconcileResult['drift'] = [];
  for (const field of ['total', 'succeeded', 'failed', 'cancelled'] as const) {
    if (before[field] !== c[field]) drift.push({ field, was: before[field], now: c[field] });
  }
  const settled = toSettled(after!, isTerminalStatus(before.status));
  return { taskId, drift, finished: settled.finished, task: settled };
}

/** Up to `limit` unfinished tasks untouched for `idleMs`, the longest idle first. */
export async function reconcileCandidates(db: PrismaQueryable, idleMs: number, limit: number, maxRunningTasks: number | null): Promise<string[]> {
  // A running task with `maxRunningTasks` of its tenant's ahead of it (in the claim's order:
  // priority, then id) waits its turn; read through the index of running tasks, at most that many.
  const rows = await db.$queryRaw<{ id: string }[]>`
    SELECT t.id FROM fanout_task t
    WHERE t.status IN ('queued', 'running', 'stopping') AND t.updated_at < now() - ${idleMs}::int * interval '1 millisecond'
      AND NOT (${maxRunningTasks}::int IS NOT NULL AND t.status = 'running' AND (
        SELECT count(*) FROM (
          SELECT 1 FROM fanout_task o
          WHERE o.kind = t.kind AND COALESCE(o.tenant, '') = COALESCE(t.tenant, '') AND o.status = 'running'
            AND (o.priority > t.priority OR (o.priority = t.priority AND o.id < t.id))
          LIMIT ${maxRunningTasks}::int) ahead) >= ${maxRunningTasks}::int)
    ORDER BY t.updated_at LIMIT ${limit}::int`;
  return rows.map((r) => r.id);
}

/**
 * Which of the tables a dispatch fills have statistics that `added` new rows would change: those
 * rows are at least a tenth of what the table's statistics count (`reltuples`: -1 or 0 when it was
 * never analyzed or vacuumed, or was empty then), as autovacuum analyzes a table once a tenth of it
 * changed.
 */
export async function statisticsDue(db: PrismaQueryable, added: number): Promise<{ ready: boolean; item: boolean }> {
  const [row] = await db.$queryRaw<{ ready: boolean; item: boolean }[]>`
    SELECT
      (SELECT reltuples FROM pg_class WHERE oid = 'fanout_ready'::regclass) * 0.1 <= ${added}::float8 AS ready,
      (SELECT reltuples FROM pg_class WHERE oid = 'fanout_item'::regclass) * 0.1 <= ${added}::float8 AS item`;
  return { ready: row?.ready ?? true, item: row?.item ?? true };
}
