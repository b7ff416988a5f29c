// The bookkeeping that follows the endings of tasks a process finished: each round recorded as
// announced (announce.ts), and each fan-in claimed and then recorded as done (fan-in.ts). Tasks
// ending together need all three writes, a few milliseconds apart; here they go in one statement,
// each write under the same conditions as its own statement.
import type { EndingWrite, RecordedEndings } from '@fanout/core';
import type { PrismaQueryable } from '../prisma-like.ts';
import { toTask, type TaskRow } from '../rows.ts';

/** The writes of one task in one statement: at most one of each kind. */
interface TaskWrites {
  id: string;
  announceRound: number | null;
  claim: boolean;
  doneRound: number | null;
  doneToken: string | null;
}

function byTask(writes: readonly EndingWrite[]): TaskWrites[] {
  const tasks = new Map<string, TaskWrites>();
  for (const w of writes) {
    let t = tasks.get(w.taskId);
    if (!t) tasks.set(w.taskId, (t = { id: w.taskId, announceRound: null, claim: false, doneRound: null, doneToken: null }));
    if (w.write === 'announced') t.announceRound = Math.max(t.announceRound ?? 0, w.round);
    else if (w.write === 'claim_fan_in') t.claim = true;
    else {
      t.doneRound = w.round;
      t.doneToken = w.token;
    }
  }
  return [...tasks.values()];
}

/**
 * One statement for the writes of several tasks. The rows are locked in id order (`locked`, like
 * every batch), and each write's condition is read there, on the row as locked (a concurrent
 * write to it committed first is seen): recorded as announced when the round was not; the fan-in
 * recorded as done only for the holder of its token; then claimed under `token` when the task is
 * finished, its round's fan-in not done and not leased, as the row stands after that completion
 * (a completion and a claim of one task in one call are the two statements one after the other).
 */
export async function recordEndings(db: PrismaQueryable, writes: readonly EndingWrite[], leaseMs: number, token: string): Promise<RecordedEndings> {
  const tasks = byTask(writes);
  const rows = await db.$queryRaw<Array<TaskRow & { claimed: boolean; completed: boolean }>>`
    -- The arrays as scalar subqueries: planned once per connection (see \`poolQueryable\`).
    WITH v AS (
      SELECT * FROM unnest((SELECT ${tasks.map((t) => t.id)}::uuid[]), (SELECT ${tasks.map((t) => t.announceRound)}::int[]),
                           (SELECT ${tasks.map((t) => t.claim)}::boolean[]), (SELECT ${tasks.map((t) => t.doneRound)}::int[]),
                           (SELECT ${tasks.map((t) => t.doneToken)}::uuid[]))
        AS v(id, announce_round, claim, done_round, done_token)
    ), locked AS (
      SELECT r.id, r.announcing, r.completing,
             r.claim AND r.status IN ('completed', 'failed', 'cancelled') AND r.purged_at IS NULL
               AND (CASE WHEN r.completing THEN r.done_round ELSE r.fanin_round END) < r.round
               AND (r.completing OR r.fanin_lease_until IS NULL OR r.fanin_lease_until < clock_timestamp()) AS claiming
      FROM (
        SELECT t.id, t.status, t.round, t.fanin_round, t.fanin_lease_until, t.purged_at, v.claim, v.done_round,
               v.announce_round IS NOT NULL AND t.announced_round < v.announce_round AS announcing,
               COALESCE(v.done_round IS NOT NULL AND t.fanin_round < v.done_round AND t.fanin_token = v.done_token, false) AS completing
        FROM fanout_task t JOIN v ON v.id = t.id
        ORDER BY t.id FOR UPDATE OF t
      ) r
    )
    UPDATE fanout_task t SET
      announced_round = CASE WHEN l.announcing THEN v.announce_round ELSE t.announced_round END,
      announce_lease_until = CASE WHEN l.announcing THEN NULL ELSE t.announce_lease_until END,
      fanin_round = CASE WHEN l.completing THEN v.done_round ELSE t.fanin_round END,
      fanin_lease_until = CASE WHEN l.claiming THEN clock_timestamp() + ${leaseMs}::int * interval '1 millisecond'
                               WHEN l.completing THEN NULL
                               ELSE t.fanin_lease_until END,
      fanin_token = CASE WHEN l.claiming THEN ${token}::uuid WHEN l.completing THEN NULL ELSE t.fanin_token END
    FROM v, locked l
    WHERE t.id = v.id AND l.id = v.id AND (l.announcing OR l.claiming OR l.completing)
    RETURNING t.*, l.claiming AS claimed, l.completing AS completed`;
  return {
    claimed: rows.filter((r) => r.claimed).map((r) => toTask(r)),
    completed: rows.filter((r) => r.completed).map((r) => r.id),
  };
}
