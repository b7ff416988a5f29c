import type pg from 'pg';
import { runStudyRule } from './study-rules.ts';
import { insertFindings, runContext, type RunContext } from './run-store.ts';

// The study-level checks read only the run's frozen datasets, never what its children found, with
// one exception: a finding's site. It is the subject's DM SITEID, or else the site the subject's
// children's findings carry. In an SDTM run every child's subject comes from DM, so the site never
// depends on the children there, and the checks can run while the children do, off the fan-in's
// critical path, with the outcome the fan-in would get. In a REDCap run the fan-in runs them.

/**
 * A transaction-scoped lock per run on its study-level checks: the early checks and the fan-in
 * never run them side by side, and a fan-in that starts while the early checks run waits for
 * their outcome instead of doing the work again.
 */
const LOCK_KEY = "hashtextextended('iit_qc_study_checks:' || $1::uuid::text, 0)";
const lockChecks = (db: pg.PoolClient, taskId: string) => db.query(`SELECT pg_advisory_xact_lock(${LOCK_KEY})`, [taskId]);

/**
 * Runs the run's study-level rules in `db`'s transaction, replacing the study-level findings it
 * holds. A rule that fails is rolled back alone: the result maps it to the reason.
 */
export async function checkStudy(db: pg.PoolClient, ctx: RunContext): Promise<Map<string, string>> {
  await db.query("DELETE FROM qc_finding WHERE run_id = $1 AND level = 'study'", [ctx.taskId]);
  const errors = new Map<string, string>();
  for (const rule of ctx.rules.filter((r) => r.level === 'study' && !ctx.skipped.has(r.id))) {
    await db.query('SAVEPOINT rule');
    try {
      for await (const findings of runStudyRule(db, ctx.taskId, rule, ctx.datasets)) await insertFindings(db, ctx.taskId, findings);
      await db.query('RELEASE SAVEPOINT rule');
    } catch (error) {
      await db.query('ROLLBACK TO SAVEPOINT rule');
      errors.set(rule.id, (error as Error).message);
    }
  }
  return errors;
}

/**
 * The fan-in's study-level checks, in its transaction (`db`, inside BEGIN): the outcome of the
 * early checks when they ran to the end (waiting for them if they are running), else the checks
 * run now. Returns each failed rule with its reason.
 */
export async function studyChecksAtFanIn(db: pg.PoolClient, ctx: RunContext): Promise<Map<string, string>> {
  await lockChecks(db, ctx.taskId);
  const { rows } = await db.query<{ study_checks: { errors: Record<string, string> } | null }>('SELECT study_checks FROM qc_run WHERE task_id = $1', [ctx.taskId]);
  const early = rows[0]?.study_checks;
  return early ? new Map(Object.entries(early.errors)) : await checkStudy(db, ctx);
}

/**
 * Starts an SDTM run's study-level checks, to run while its children do: resolves once they hold
 * the run's lock (the manager waits for that much before it lists a subject, so no fan-in can
 * begin before them), with `done`, the checks' end, when they store their findings and outcome in
 * one transaction, which the fan-in then keeps. Resolves to null, and does nothing, for a REDCap
 * run, or when the lock is taken (a manager's earlier attempt is running them), the checks are
 * stored or the fan-in is done. If they fail or their process dies, nothing of them stays and the
 * fan-in runs them.
 */
export async function startStudyChecks(pool: pg.Pool, taskId: string): Promise<{ done: Promise<void> } | null> {
  const client = await pool.connect();
  const end = async (statement: 'COMMIT' | 'ROLLBACK') => {
    try {
      await client.query(statement);
    } finally {
      client.release();
    }
  };
  try {
    await client.query('BEGIN');
    // The run's rules are not needed to take the lock: the manager lists its subjects sooner.
    const { rows } = await client.query<{ locked: boolean; stage: string; checked: boolean; standard: string }>(
      `SELECT pg_try_advisory_xact_lock(${LOCK_KEY}) AS locked, r.stage, r.study_checks IS NOT NULL AS checked, s.standard
       FROM qc_run r JOIN qc_study s ON s.id = r.study_id WHERE r.task_id = $1::uuid`,
      [taskId],
    );
    const run = rows[0];
    // The fan-in sets 'finishing' and 'done' in its own transaction: seen here once it committed.
    if (!run?.locked || run.checked || run.stage === 'finishing' || run.stage === 'done' || run.standard !== 'sdtm') {
      await end('ROLLBACK');
      return null;
    }
  } catch (error) {
    await end('ROLLBACK').catch(() => {});
    throw error;
  }
  // In an object: a promise returned from an async function would be waited for.
  const done = (async () => {
    try {
      // One backend, no parallel workers: beside the children, the checks take one share of the
      // machine, not three (the fan-in, alone, lets the planner parallelise them).
      await client.query('SET LOCAL max_parallel_workers_per_gather = 0');
      const errors = await checkStudy(client, await runContext(pool, taskId));
      await client.query('UPDATE qc_run SET study_checks = $2 WHERE task_id = $1', [taskId, JSON.stringify({ errors: Object.fromEntries(errors) })]);
    } catch (error) {
      await end('ROLLBACK').catch(() => {});
      throw error;
    }
    await end('COMMIT');
  })();
  return { done };
}
