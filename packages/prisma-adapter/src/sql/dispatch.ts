// Dispatch: a task is created together with its manager job, and the manager inserts the task's
// items a page at a time, each page in one transaction with the jobs that will take them (a few
// per tenant, whatever the number of items: see the runtime's scheduler). A
// manager that crashes mid-dispatch loses nothing (a page is all or nothing) and duplicates
// nothing (a retried manager skips the keys the task already has).
import { FanoutError, type DispatchedTask, type EnqueueWork, type EnqueueTask, type InsertItemsResult, type NewItem, type NewTask, type SettledTask, type SubmittedTask, type TaskRecord, type TaskStatus } from '@fanout/core';
import { executor } from '../executor.ts';
import { uuidv7 } from '../ids.ts';
import { json } from '../json.ts';
import type { PrismaQueryable } from '../prisma-like.ts';
import { toSettled, toTask, type TaskRow } from '../rows.ts';

/**
 * Ids for `count` new items, in listing order: time-ordered (UUIDv7), so that a page's rows go in
 * at the end of the item table's primary key instead of one random leaf each (and a claim, which
 * takes items in listing order, gives its settle rows that are neighbours in that key too). Sent
 * as one text, split by the statement: `pg` writes an array parameter element by element, which
 * cost the manager more than making the ids.
 */
function itemIds(count: number): string {
  let ids = count > 0 ? uuidv7() : '';
  for (let i = 1; i < count; i++) ids += `,${uuidv7()}`;
  return ids;
}

/** Rolls a dispatch page back because its task stopped while the page was being inserted. */
export class StoppedWhileInserting extends Error {}

/**
 * Inserts a `queued` task and enqueues its manager job, both in `tx`. With an idempotency key
 * already used for this kind and tenant, inserts nothing and returns the first task (`replayed`),
 * or refuses when the key came with another request. The unique index decides between two
 * submits racing with one key: the loser's insert does nothing and it reads the winner's task.
 */
export async function insertTask(tx: PrismaQueryable, task: NewTask, enqueue: EnqueueTask): Promise<SubmittedTask> {
  const [row] = await tx.$queryRaw<TaskRow[]>`
    INSERT INTO fanout_task (id, kind, tenant, input, max_attempts, max_failures, max_failure_ratio, deadline_at, summary, idempotency_key, request_hash, priority,
                             status)
    VALUES (${task.id ?? uuidv7()}::uuid, ${task.kind}, ${task.tenant ?? null}, ${json(task.input)}::jsonb, ${task.maxAttempts}::int,
            ${task.maxFailures ?? null}::int, ${task.maxFailureRatio ?? null}::float8, ${task.deadlineAt ?? null}::timestamptz,
            ${task.summary ?? null}::text, ${task.idempotencyKey ?? null}::text, ${task.requestHash ?? null}::text, ${task.priority ?? 0}::int,
            'queued')
    ON CONFLICT (kind, (COALESCE(tenant, '')), idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING *`;
  if (row) {
    const record = toTask(row);
    await enqueue(executor(tx), record);
    return { ...record, replayed: false };
  }
  return replayedTask(tx, task);
}

/** The id of the task an idempotency key was used for, by kind and tenant (the key's unique index), or null. */
export async function keyedTask(db: PrismaQueryable, kind: string, tenant: string | null, key: string): Promise<string | null> {
  const [row] = await db.$queryRaw<{ id: string }[]>`
    SELECT id FROM fanout_task WHERE kind = ${kind} AND COALESCE(tenant, '') = COALESCE(${tenant}::text, '') AND idempotency_key = ${key}::text`;
  return row?.id ?? null;
}

/** The task an idempotency key was first used for (the insert of `task` found it), or `conflict` when the key came with another request. */
async function replayedTask(tx: PrismaQueryable, task: NewTask): Promise<SubmittedTask> {
  const [first] = await tx.$queryRaw<TaskRow[]>`
    SELECT * FROM fanout_task
    WHERE kind = ${task.kind} AND COALESCE(tenant, '') = COALESCE(${task.tenant ?? null}::text, '') AND idempotency_key = ${task.idempotencyKey ?? null}::text`;
  if (!first) throw new FanoutError('conflict', 'idempotencyKey: the task of this key was just deleted; use a new key', { field: 'idempotencyKey' });
  if (first.request_hash !== (task.requestHash ?? null)) {
    throw new FanoutError('conflict', `idempotencyKey: this key was used for another request (task ${first.id}); use a new key for a new task`, { field: 'idempotencyKey' });
  }
  return { ...toTask(first), replayed: true };
}

/**
 * A task with its dispatch done, in `tx`: inserted `running` with its counters final and its
 * dispatch marked done (finished at once when nothing is left to run, stopping when its failures
 * are over the tolerance: the same functions as a manager's last page and `finishDispatch`), with
 * its items and their ready rows, in one statement; then its tenant's jobs (none when `enqueue` is
 * null: the statement alone, on a connection outside any transaction, is all or nothing). A new task has no
 * items yet, so its counters are known before it goes in: the first item of each key is kept (a
 * page skips a key it repeats the same way). No other transaction can see the task before the
 * commit, so nothing is locked or re-read on the way. A replayed idempotency key inserts nothing.
 */
export async function insertDispatchedTask(tx: PrismaQueryable, task: NewTask, items: readonly NewItem[], enqueue: EnqueueWork | null, trace: Record<string, string> | null): Promise<DispatchedTask> {
  // Keys compared as PostgreSQL stores them (a lone surrogate is sent as U+FFFD, so two keys that
  // differ only there are one key in the table).
  const seen = new Set<string>();
  const kept = items.filter((item) => {
    const key = item.key.toWellFormed();
    return !seen.has(key) && seen.add(key);
  });
  const errors = kept.map((item) => json(item.error));
  const total = kept.length;
  // Counted as the statement stores them: an item with an error value is stored failed.
  const failed = errors.filter((error) => error !== null).length;
  const [row] = await tx.$queryRaw<TaskRow[]>`
    WITH counted AS (
      SELECT fanout_over_limit(${failed}::int, ${total}::int, true, ${task.maxFailures ?? null}::int, ${task.maxFailureRatio ?? null}::float8) AS over
    ), task AS (
      INSERT INTO fanout_task (id, kind, tenant, input, max_attempts, max_failures, max_failure_ratio, deadline_at, summary, idempotency_key, request_hash, priority,
                               status, stop_reason, started_at, round_started_at, dispatched_at, completed_at, trace, total, failed)
      SELECT ${task.id ?? uuidv7()}::uuid, ${task.kind}, ${task.tenant ?? null}, ${json(task.input)}::jsonb, ${task.maxAttempts}::int,
             ${task.maxFailures ?? null}::int, ${task.maxFailureRatio ?? null}::float8, ${task.deadlineAt ?? null}::timestamptz,
             ${task.summary ?? null}::text, ${task.idempotencyKey ?? null}::text, ${task.requestHash ?? null}::text, ${task.priority ?? 0}::int,
             fanout_next_status('running', NULL, true, ${failed}::int, ${total}::int, counted.over), fanout_next_stop_reason(NULL, counted.over),
             now(), now(), now(),
             CASE WHEN fanout_next_status('running', NULL, true, ${failed}::int, ${total}::int, counted.over) IN ('completed', 'failed', 'cancelled') THEN now() END,
             ${trace ? JSON.stringify(trace) : null}::jsonb, ${total}::int, ${failed}::int
      FROM counted
      ON CONFLICT (kind, (COALESCE(tenant, '')), idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
      RETURNING *
    ), inserted AS (
      INSERT INTO fanout_item (id, task_id, seq, key, snapshot, status, error, finished_at)
      SELECT x.id, task.id, x.seq, x.key, x.snapshot::jsonb,
             CASE WHEN x.error IS NULL THEN 'pending' ELSE 'failed' END, x.error::jsonb,
             CASE WHEN x.error IS NULL THEN NULL ELSE clock_timestamp() END
      FROM task, unnest(string_to_array(${itemIds(kept.length)}::text, ',')::uuid[], ${kept.map((i) => i.key)}::text[], ${kept.map((i) => i.seq)}::int[],
                        ${kept.map((i) => json(i.snapshot ?? null))}::text[], ${errors}::text[])
           WITH ORDINALITY AS x(id, key, seq, snapshot, error, ord)
      ORDER BY x.ord
      RETURNING id, task_id, seq, status
    ), ready AS (
      INSERT INTO fanout_ready (task_id, seq, item_id) SELECT task_id, seq, id FROM inserted WHERE status = 'pending'
    )
    -- As many items as counted went in, or the statement fails (and with it the whole write, in a
    -- transaction or not): a text that is not a number, cast to one, is an error that says so.
    SELECT task.*,
           CASE WHEN (SELECT count(*) FROM inserted) = ${total}::int THEN 0
                ELSE ('fanout: ' || (SELECT count(*) FROM inserted) || ' of the task''s ' || ${total}::int || ' items went in')::int END AS checked
    FROM task`;
  if (!row) {
    // The key was used before: the first task of it, as a plain submit reads it.
    return { task: await replayedTask(tx, task), inserted: 0, settled: null };
  }
  if (enqueue && row.total > row.failed) await enqueue(executor(tx), [{ taskId: row.id, kind: row.kind, tenant: row.tenant }]);
  return { task: { ...toTask(row), replayed: false }, inserted: row.total, settled: toSettled(row) };
}

/** `queued` -> `running`; null when the task was not queued (the caller reads it as it is). */
export async function startDispatch(db: PrismaQueryable, taskId: string, trace: Record<string, string> | null): Promise<TaskRecord | null> {
  const [started] = await db.$queryRaw<TaskRow[]>`
    UPDATE fanout_task SET status = 'running', started_at = now(), round_started_at = now(), updated_at = now(),
      trace = ${trace === null ? null : JSON.stringify(trace)}::jsonb
    WHERE id = ${taskId}::uuid AND status = 'queued'
    RETURNING *`;
  return started ? toTask(started) : null;
}

/**
 * One page of items and their child jobs, in `tx`. Throws `StoppedWhileInserting` (to roll the
 * page back) when the task stopped before the counters could be raised.
 */
export async function insertItemPage(tx: PrismaQueryable, taskId: string, items: readonly NewItem[], enqueue: EnqueueWork): Promise<InsertItemsResult> {
  // No lock up front, so pages of one task can be inserted side by side; the counter
  // update at the end re-checks the status under the row lock, and rolls the page back
  // if the task stopped meanwhile (a stop never sees this page's uncommitted items).
  const [task] = await tx.$queryRaw<Pick<TaskRow, 'status' | 'kind' | 'tenant'>[]>`SELECT status, kind, tenant FROM fanout_task WHERE id = ${taskId}::uuid`;
  if (!task) throw new FanoutError('not_found', `task ${taskId} does not exist`, { field: 'taskId' });
  if (task.status !== 'running' || items.length === 0) return { inserted: 0, status: task.status as TaskStatus };

  const { inserted, failed } = await insertItemRows(tx, taskId, items);
  if (inserted > failed) {
    // pg-boss's foreign keys are deferred to the commit, where this transaction holds the
    // task row (below) and every settle of the task would wait for the checks: check them as
    // the jobs go in instead.
    await tx.$queryRaw`SET CONSTRAINTS ALL IMMEDIATE`;
    await enqueue(executor(tx), [{ taskId, kind: task.kind, tenant: task.tenant }]);
  }
  // The counters last: the task row stays locked until the commit, and every settle of this
  // task waits for that lock, so it is taken after the slow part (the jobs), not before.
  // Items that failed validation count now: past `maxFailures` the task stops here, not at the end
  // of its dispatch (a ratio waits for the final total).
  const [counted] = await tx.$queryRaw<{ status: string }[]>`
    UPDATE fanout_task SET total = total + ${inserted}::int, failed = failed + ${failed}::int, updated_at = now(),
      stop_reason = fanout_next_stop_reason(stop_reason, fanout_over_limit(failed + ${failed}::int, total + ${inserted}::int, false, max_failures, max_failure_ratio)),
      status = CASE WHEN fanout_over_limit(failed + ${failed}::int, total + ${inserted}::int, false, max_failures, max_failure_ratio) THEN 'stopping' ELSE status END
    WHERE id = ${taskId}::uuid AND status = 'running'
    RETURNING status`;
  if (!counted) throw new StoppedWhileInserting();
  return { inserted, status: counted.status as TaskStatus };
}

/**
 * Inserts a page of a task's items (pending, or failed when they failed validation) in listing
 * order, and answers how many went in and how many of those failed. A key the task already has
 * (a manager retried after a crash), or repeated in the page, is skipped.
 */
async function insertItemRows(tx: PrismaQueryable, taskId: string, items: readonly NewItem[]): Promise<{ inserted: number; failed: number }> {
  // The pending ones are ready to be claimed: each gets its row in fanout_ready, in the same
  // statement. The answer is two counts, not a row per item (a page is up to thousands).
  const [counts] = await tx.$queryRaw<{ inserted: number; failed: number }[]>`
    WITH inserted AS (
      INSERT INTO fanout_item (id, task_id, seq, key, snapshot, status, error, finished_at)
      SELECT x.id, ${taskId}::uuid, x.seq, x.key, x.snapshot::jsonb,
             CASE WHEN x.error IS NULL THEN 'pending' ELSE 'failed' END, x.error::jsonb,
             CASE WHEN x.error IS NULL THEN NULL ELSE clock_timestamp() END
      FROM unnest(string_to_array(${itemIds(items.length)}::text, ',')::uuid[], ${items.map((i) => i.key)}::text[], ${items.map((i) => i.seq)}::int[],
                  ${items.map((i) => json(i.snapshot ?? null))}::text[], ${items.map((i) => json(i.error))}::text[])
           WITH ORDINALITY AS x(id, key, seq, snapshot, error, ord)
      ORDER BY x.ord
      ON CONFLICT (task_id, key) DO NOTHING
      RETURNING id, seq, status
    ), ready AS (
      INSERT INTO fanout_ready (task_id, seq, item_id) SELECT ${taskId}::uuid, seq, id FROM inserted WHERE status = 'pending'
    )
    SELECT count(*)::int AS inserted, (count(*) FILTER (WHERE status = 'failed'))::int AS failed FROM inserted`;
  return counts!;
}

/**
 * Marks the dispatch done (`total` is final) and, in the same statement, finishes the task when
 * every item is already settled or its failures are over the tolerance. Only the first call
 * changes anything (`dispatched_at IS NULL`). `cutShort`: the listing stopped before its end.
 */
export async function finishDispatch(db: PrismaQueryable, taskId: string, cutShort: boolean): Promise<SettledTask | null> {
  const [row] = await db.$queryRaw<TaskRow[]>`
    UPDATE fanout_task SET
      dispatched_at = now(), dispatch_cut = ${cutShort}::boolean, updated_at = now(),
      stop_reason = fanout_next_stop_reason(stop_reason, fanout_over_limit(failed, total, true, max_failures, max_failure_ratio)),
      status = fanout_next_status(status, stop_reason, true, succeeded + failed + cancelled, total,
                                  fanout_over_limit(failed, total, true, max_failures, max_failure_ratio)),
      completed_at = CASE WHEN fanout_next_status(status, stop_reason, true, succeeded + failed + cancelled, total,
                                  fanout_over_limit(failed, total, true, max_failures, max_failure_ratio)) IN ('completed', 'failed', 'cancelled')
                          THEN now() ELSE completed_at END
    WHERE id = ${taskId}::uuid AND dispatched_at IS NULL
    RETURNING *`;
  return row ? toSettled(row) : null;
}
