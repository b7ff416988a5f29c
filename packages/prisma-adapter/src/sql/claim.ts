// Optimistic claim: a child takes its items with one conditional UPDATE that sets its claim token
// and the attempt number, only where the item is `pending`, or `running` under a claim whose lease
// lapsed with attempts left, and its task is `running`. There is no read-then-write to race: two
// workers given the same item (a retried job, a job given twice) cannot both match the row, since
// the second UPDATE waits for the first's row lock and then re-checks the condition. A retry that
// finds the item held under a live lease skips it; a lapsed lease (its holder died) is taken over.
// Every later write of the item (settle, release) is conditional on the token, so a worker whose
// claim was taken over can no longer change the item.
//
// Pending items are found through their rows in `fanout_ready` (one per pending item, deleted by
// the claim that takes it), and the lease is kept once per claim in `fanout_claim` (renewed there,
// and read there by the maintenance loop), so neither the claim nor the settle changes an indexed
// column of the item table: both update the item row in place (HOT), with no index writes.
//
// Lock order, the same in every statement that takes these locks: ready rows, then item rows, then
// claim rows; the maintenance loop's recovery takes a claim row first and then only items of that
// claim, which nothing else locks after a claim row (a settle never touches claim rows).
//
// Relaxed commits: claims and lease renewals run with `synchronous_commit` off for their own
// transaction (the `relaxed` CTE), so they do not wait for the WAL to reach the disk. Losing one
// in a database crash is harmless (the item is claimed again), and the durable settle that
// follows flushes it anyway, since the WAL is written in order.
import type { ClaimedItem, ClaimNextQuery, ClaimNextResult, EnqueueWork, Release } from '@fanout/core';
import { executor } from '../executor.ts';
import { inItemIdOrder } from '../ids.ts';
import { json } from '../json.ts';
import type { PrismaQueryable } from '../prisma-like.ts';

/** What a claim answers of an item. */
interface ItemColumns {
  id: string;
  task_id: string;
  key: string;
  snapshot: unknown;
  attempts: number;
  round: number;
}

/** What a claim answers of the item's task. */
interface TaskColumns {
  kind: string;
  tenant: string | null;
  max_attempts: number;
  deadline_at: Date | null;
  trace?: Record<string, string> | null;
}

const toClaimed = (i: ItemColumns, t: TaskColumns, dueAt: number | null = null): ClaimedItem => ({
  itemId: i.id,
  taskId: i.task_id,
  kind: t.kind,
  tenant: t.tenant,
  key: i.key,
  snapshot: i.snapshot,
  attempt: i.attempts,
  maxAttempts: t.max_attempts,
  round: i.round,
  deadlineAt: t.deadline_at,
  trace: t.trace ?? null,
  dueAt,
});

/**
 * Claims the claimable ones of `ids` (valid uuids) for `token` until `leaseMs` from now, in `tx`:
 * pending ones (their ready rows taken first, in key order, so concurrent claims of the same items
 * queue instead of deadlocking) and running ones whose claim lapsed, with attempts left.
 */
export async function claimItems(tx: PrismaQueryable, ids: readonly string[], token: string, leaseMs: number): Promise<ClaimedItem[]> {
  await tx.$queryRaw`
    SELECT 1 AS locked FROM fanout_ready r JOIN fanout_item i ON r.task_id = i.task_id AND r.seq = i.seq AND r.item_id = i.id
    WHERE i.id = ANY(${ids}::uuid[])
    ORDER BY r.task_id, r.seq, r.item_id
    FOR UPDATE OF r`;
  // Items are found by primary key only, and their task is checked per row by a subquery: a
  // join on task_id could lead the planner to walk every item of a large task.
  const rows = await tx.$queryRaw<(ItemColumns & TaskColumns)[]>`
    WITH relaxed AS (SELECT set_config('synchronous_commit', 'off', true)),
    lapsed AS (
      SELECT i.id FROM fanout_item i JOIN fanout_claim c ON c.token = i.claim_token
      WHERE i.id = ANY(${ids}::uuid[]) AND i.status = 'running' AND c.lease_until < clock_timestamp()
    ),
    claimed AS (
      UPDATE fanout_item i SET
        status = 'running', claim_token = ${token}::uuid, attempts = i.attempts + 1,
        started_at = COALESCE(i.started_at, clock_timestamp()), retry_at = NULL
      FROM relaxed
      WHERE i.id = ANY(${ids}::uuid[])
        AND (SELECT t.status = 'running'
                    AND (i.status = 'pending' OR (i.status = 'running' AND i.id IN (SELECT id FROM lapsed) AND i.attempts < t.max_attempts))
             FROM fanout_task t WHERE t.id = i.task_id)
      RETURNING i.id, i.task_id, i.seq, i.key, i.snapshot, i.attempts, i.round
    ),
    taken AS (
      DELETE FROM fanout_ready r USING claimed c WHERE r.task_id = c.task_id AND r.seq = c.seq AND r.item_id = c.id
    ),
    rows AS (SELECT c.*, t.kind, t.tenant, t.max_attempts, t.deadline_at FROM claimed c JOIN fanout_task t ON t.id = c.task_id),
    lease AS (
      INSERT INTO fanout_claim (token, kind, tenant, item_ids, lease_until)
      SELECT ${token}::uuid, kind, COALESCE(tenant, ''), array_agg(id), clock_timestamp() + ${leaseMs}::int * interval '1 millisecond'
      FROM rows GROUP BY kind, COALESCE(tenant, '')
      ON CONFLICT (token, kind, tenant) DO UPDATE SET item_ids = fanout_claim.item_ids || EXCLUDED.item_ids, lease_until = EXCLUDED.lease_until
    )
    SELECT * FROM rows`;
  return rows.map((r) => toClaimed(r, r));
}

/** Orders uuids below every real one: "after nothing" starts from the first task. */
const NO_TASK = '00000000-0000-0000-0000-000000000000';

/**
 * The scheduler's claim (see `FanoutStore.claimNext`), in one statement: the tenant's running
 * tasks in the order they are served (priority, then id), the first one after `after` that has an
 * item to run now, and up to `limit` of its next pending items, locked with SKIP LOCKED so
 * concurrent claims take different items instead of waiting for each other. Every lookup goes
 * through an index of what is left to do (running tasks, ready items), so its cost does not grow
 * with the items a task has already run. `limit` 0 claims nothing.
 */
/** Tasks one claim takes items from at most (the next ones in turn, while there is room). */
const TASKS_PER_CLAIM = 8;

export async function claimNext(db: PrismaQueryable, query: ClaimNextQuery, limit: number): Promise<ClaimNextResult> {
  const group = query.tenant ?? '';
  const rows = await db.$queryRaw<NextRow[]>`
    WITH relaxed AS (SELECT set_config('synchronous_commit', 'off', true)),
    eligible AS (
      SELECT t.id, t.priority FROM fanout_task t
      WHERE t.kind = (SELECT ${query.kind}::text) AND COALESCE(t.tenant, '') = (SELECT ${group}::text) AND t.status = 'running'
      ORDER BY t.priority DESC, t.id
      LIMIT (SELECT ${query.maxRunningTasks ?? null}::int)
    ),
    -- The tasks whose turn it is, in order: the next ones after the task served last.
    turns AS (
      SELECT e.id, row_number() OVER (ORDER BY e.priority DESC, e.id > (SELECT ${query.after ?? NO_TASK}::uuid) DESC, e.id) AS turn
      FROM eligible e
      -- Whether the task has an item to run now, read in listing order through the ready rows'
      -- key. (Written as EXISTS, the planner may guess that scanning the table finds one sooner:
      -- a claim then walked the whole table for each task of the tenant.)
      CROSS JOIN LATERAL (
        SELECT 1 FROM fanout_ready p
        WHERE p.task_id = e.id AND (p.due_at IS NULL OR p.due_at <= clock_timestamp())
        ORDER BY p.seq LIMIT 1
      ) due
      ORDER BY turn
      LIMIT (SELECT ${TASKS_PER_CLAIM}::int)
    ),
    -- Items of the first task, then of the next while there is room (small tasks share a claim).
    -- The nested loop takes the tasks in turn and stops once the limit is reached.
    picked AS (
      SELECT p.rid, p.item_id, p.due_at, t.turn FROM turns t
      CROSS JOIN LATERAL (
        SELECT r.ctid AS rid, r.item_id, r.due_at FROM fanout_ready r
        WHERE r.task_id = t.id AND (r.due_at IS NULL OR r.due_at <= clock_timestamp())
        ORDER BY r.seq
        LIMIT (SELECT ${limit}::int)
        FOR UPDATE OF r SKIP LOCKED
      ) p
      LIMIT (SELECT ${limit}::int)
    ),
    -- The ready rows taken go, whatever their item says (a row whose item is not pending is stale).
    taken AS (DELETE FROM fanout_ready r WHERE r.ctid = ANY(ARRAY(SELECT rid FROM picked))),
    claimed AS (
      UPDATE fanout_item i SET
        status = 'running', claim_token = ${query.token}::uuid, attempts = i.attempts + 1,
        started_at = COALESCE(i.started_at, clock_timestamp()), retry_at = NULL
      FROM picked, relaxed
      WHERE i.id = picked.item_id AND i.status = 'pending'
      RETURNING i.id, i.task_id, i.key, i.snapshot, i.attempts, i.round, i.seq
    ),
    lease AS (
      INSERT INTO fanout_claim (token, kind, tenant, item_ids, lease_until)
      SELECT ${query.token}::uuid, ${query.kind}, ${group}, array_agg(id), clock_timestamp() + ${query.leaseMs}::int * interval '1 millisecond'
      FROM claimed HAVING count(*) > 0
      ON CONFLICT (token, kind, tenant) DO UPDATE SET item_ids = fanout_claim.item_ids || EXCLUDED.item_ids, lease_until = EXCLUDED.lease_until
    )
    -- The items claimed, then one row per task they belong to with what they share (a claim of 100
    -- items of one task sends and parses the task's columns once, not 100 times), then one row
    -- with the task whose turn it was first.
    SELECT c.id, c.task_id, c.key, c.snapshot, c.attempts, c.round, c.seq, p.turn,
           -- A retried item became due when its delay ended (ms since epoch; null: due since its round started).
           (extract(epoch FROM p.due_at) * 1000)::float8 AS due_ms,
           NULL::text AS kind, NULL::text AS tenant, NULL::int AS max_attempts, NULL::timestamptz AS deadline_at,
           NULL::jsonb AS trace, NULL::float8 AS started_ms, NULL::uuid AS first_task
    FROM claimed c JOIN picked p ON p.item_id = c.id
    UNION ALL
    SELECT NULL, t.id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, t.kind, t.tenant, t.max_attempts, t.deadline_at, t.trace,
           (extract(epoch FROM coalesce(t.round_started_at, t.started_at)) * 1000)::float8, NULL
    FROM fanout_task t WHERE t.id IN (SELECT task_id FROM claimed)
    UNION ALL
    SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, (SELECT id FROM turns ORDER BY turn LIMIT 1)`;
  const tasks = new Map<string, NextRow>();
  const items: NextRow[] = [];
  let firstTask: string | null = null;
  for (const r of rows) {
    if (r.id !== null) items.push(r);
    else if (r.task_id !== null) tasks.set(r.task_id, r);
    else firstTask = r.first_task;
  }
  // In turn, then in listing order.
  items.sort((x, y) => Number(x.turn) - Number(y.turn) || x.seq! - y.seq!);
  const claimed = items.map((r) => {
    const t = tasks.get(r.task_id!)!;
    return toClaimed(r as ItemColumns, t as TaskColumns, r.due_ms ?? t.started_ms ?? null);
  });
  // The task served last (the next job starts after it), or the first whose turn it was when its
  // items were all taken by concurrent claims.
  return { claimed, taskId: claimed.at(-1)?.taskId ?? firstTask, atQuota: false };
}

/** A row of `claimNext`'s answer: an item claimed, a task of those items, or the first task in turn. */
interface NextRow {
  id: string | null;
  task_id: string | null;
  key: string | null;
  snapshot: unknown;
  attempts: number | null;
  round: number | null;
  seq: number | null;
  turn: bigint | number | null;
  due_ms: number | null;
  kind: string | null;
  tenant: string | null;
  max_attempts: number | null;
  deadline_at: Date | null;
  trace: Record<string, string> | null;
  started_ms: number | null;
  first_task: string | null;
}

/**
 * Running items of a kind and tenant (for its in-flight quota), read through the tenant's claims:
 * there are never more of those than the handlers of every process together hold.
 */
export async function runningOfTenant(db: PrismaQueryable, kind: string, tenant: string | null): Promise<number> {
  const [row] = await db.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n
    FROM fanout_claim c CROSS JOIN LATERAL unnest(c.item_ids) x(id) JOIN fanout_item i ON i.id = x.id
    WHERE c.kind = ${kind} AND c.tenant = ${tenant ?? ''} AND i.claim_token = c.token AND i.status = 'running'`;
  return row!.n;
}

/**
 * Extends the leases of the claims `held` is under (relaxed commit); returns the ids of the items
 * still held under their token.
 */
export async function renewLeases(db: PrismaQueryable, held: ReadonlyArray<{ itemId: string; token: string }>, leaseMs: number): Promise<string[]> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    WITH relaxed AS (SELECT set_config('synchronous_commit', 'off', true)),
    renewed AS (
      UPDATE fanout_claim c SET lease_until = clock_timestamp() + ${leaseMs}::int * interval '1 millisecond'
      FROM relaxed WHERE c.token = ANY(${[...new Set(held.map((h) => h.token))]}::uuid[])
      RETURNING c.token
    ),
    h AS (SELECT ${held.map((h) => h.itemId)}::uuid[] AS ids, ${held.map((h) => h.token)}::uuid[] AS tokens)
    SELECT i.id FROM fanout_item i, h
    WHERE i.id = ANY(h.ids) AND i.claim_token = h.tokens[array_position(h.ids, i.id)] AND i.status = 'running'
      AND i.claim_token IN (SELECT token FROM renewed)`;
  return rows.map((r) => r.id);
}

/**
 * Forgets the claims of `tokens`, which their worker is done with (see `FanoutStore.endClaims`),
 * unless one still holds a running item: the worker's word is not taken for it. An outcome the
 * worker saw committed can still be missing, when the server lost commits it had acknowledged
 * (`synchronous_commit` off, `fsync` off, a failover to a replica that was behind); such a claim
 * is kept, its lease lapses, and the maintenance loop gives its items again.
 *
 * The check is a scalar subquery, run per claim: a claim's items are read by primary key. As a
 * plain `NOT EXISTS` the planner may make it an anti-join, and with a few claims it hashes them
 * and scans the whole item table (8 ms at 40,000 items, for every batch of ended claims).
 */
export async function endClaims(db: PrismaQueryable, tokens: readonly string[]): Promise<void> {
  await db.$queryRaw`
    -- The array as a scalar subquery: planned once per connection (see \`poolQueryable\`).
    DELETE FROM fanout_claim c
    WHERE c.token = ANY((SELECT ${tokens}::uuid[])::uuid[])
      AND NOT (SELECT EXISTS (SELECT 1 FROM fanout_item i WHERE i.id = ANY(c.item_ids) AND i.claim_token = c.token AND i.status = 'running'))
    RETURNING 1 AS gone`;
}

/**
 * Gives claims back after a transient failure, in `tx`: items of running tasks still held under
 * their token go back to `pending` (due again after their delay), and their tasks' work is
 * enqueued in the same transaction. Returns the ids released.
 */
export async function releaseClaims(tx: PrismaQueryable, given: readonly Release[], enqueue: EnqueueWork): Promise<string[]> {
  // The items are locked in the order the releases come.
  const releases = inItemIdOrder(given);
  // A stop takes the task row FOR UPDATE before it cancels pending items: share-locking the
  // tasks first orders this release before or after it, never across it (a release that
  // slipped in after the stop's cancel would leave a pending item nobody may claim).
  await tx.$queryRaw`
    SELECT 1 FROM fanout_task WHERE id IN (SELECT task_id FROM fanout_item WHERE id = ANY(${releases.map((r) => r.itemId)}::uuid[]))
    ORDER BY id FOR KEY SHARE`;
  const rows = await tx.$queryRaw<{ id: string; task_id: string; kind: string; tenant: string | null; delay_ms: number; due_ms: number }[]>`
    WITH v AS (
      -- Each release finds its item by primary key, as a settle's outcome does (see settle.ts).
      SELECT * FROM unnest((SELECT ${releases.map((r) => r.itemId)}::uuid[]), (SELECT ${releases.map((r) => r.token)}::uuid[]),
                           (SELECT ${releases.map((r) => json(r.error))}::text[]), (SELECT ${releases.map((r) => Math.round(r.delayMs))}::int[]),
                           (SELECT ${releases.map((r) => r.refund === true)}::boolean[])) AS v(id, token, error, delay, refund)
    ), released AS (
      UPDATE fanout_item i SET status = 'pending', claim_token = NULL,
        -- A refunded attempt (the process shut down mid-item) does not count, and keeps the last error.
        attempts = i.attempts - CASE WHEN v.refund THEN 1 ELSE 0 END,
        error = CASE WHEN v.refund THEN i.error ELSE v.error::jsonb END,
        retry_at = clock_timestamp() + v.delay * interval '1 millisecond'
      FROM v
      WHERE i.id = v.id AND i.claim_token = v.token AND i.status = 'running'
        AND (SELECT t.status = 'running' FROM fanout_task t WHERE t.id = i.task_id)
      RETURNING i.id, i.task_id, i.seq, i.retry_at, v.delay AS delay_ms
    ), ready AS (
      INSERT INTO fanout_ready (task_id, seq, item_id, due_at) SELECT task_id, seq, id, retry_at FROM released
      ON CONFLICT DO NOTHING
    )
    SELECT r.id, r.task_id, r.delay_ms, (extract(epoch FROM r.retry_at) * 1000)::float8 AS due_ms, t.kind, t.tenant
    FROM released r JOIN fanout_task t ON t.id = r.task_id`;
  if (rows.length > 0) {
    // One entry per task and delay: the runtime gives the task's tenant a job for when it is due,
    // by this database's clock (the latest of the entry's items).
    const work = new Map<string, { taskId: string; kind: string; tenant: string | null; delayMs: number; dueAt: number }>();
    for (const r of rows) {
      const key = `${r.task_id}:${r.delay_ms}`;
      const dueAt = Math.max(r.due_ms, work.get(key)?.dueAt ?? 0);
      work.set(key, { taskId: r.task_id, kind: r.kind, tenant: r.tenant, delayMs: r.delay_ms, dueAt });
    }
    await enqueue(executor(tx), [...work.values()]);
  }
  return rows.map((r) => r.id);
}
