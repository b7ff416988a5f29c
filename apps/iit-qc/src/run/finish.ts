import type { FinishedTask } from '@fanout/core';
import type pg from 'pg';
import { studyChecksAtFanIn } from './study-checks.ts';
import { forgetRun, runContext } from './run-store.ts';

export interface RunSummary {
  skipped: Record<string, string>;
  /** Every subject checked (no child failed or was cancelled): only such a run is a later run's baseline. */
  complete: boolean;
  /** Subjects whose children checked them (all of them in a complete run). */
  checkedSubjects: number;
  /**
   * A later run of the study was settled first: this run's findings are kept, and the study's
   * discrepancies are left as that run settled them.
   */
  supersededBy: string | null;
  subjects: number;
  issues: number;
  excluded: number;
  new: number;
  open: number;
  resolved: number;
  previousRunId: string | null;
  rules: { passed: number; issues: number; skipped: number; error: number };
}

/**
 * Whether run `run` (a SQL parameter) checked what `alias` (a finding or a discrepancy of its
 * study) says, once its rule results are stored: the rule ran (not skipped), and a study-level rule
 * without error, any other on the alias's subject without error there, the subject checked by a
 * child of the run, or the run complete (it listed every subject the data has: one no longer in
 * it is checked and found clean). A rule result from before rule levels were stored counts as
 * checked unless skipped.
 */
export const checkedByRun = (alias: string, run: string) => `EXISTS (SELECT 1 FROM qc_rule_result r WHERE r.run_id = ${run} AND r.rule_id = ${alias}.rule_id AND r.status <> 'skipped'
    AND CASE WHEN r.level IS NULL THEN true
             WHEN r.level = 'study' THEN r.status <> 'error'
             ELSE ((SELECT q.complete FROM qc_run q WHERE q.task_id = ${run}) OR EXISTS (SELECT 1 FROM qc_run_subject s WHERE s.run_id = ${run} AND s.subject = ${alias}.subject))
                  AND NOT EXISTS (SELECT 1 FROM qc_rule_error e WHERE e.run_id = ${run} AND e.subject = ${alias}.subject AND e.rule_id = ${alias}.rule_id AND e.count > 0) END)`;

/** What the fan-in reads of the run's task. */
export type RunEnding = Pick<FinishedTask, 'id' | 'round' | 'status' | 'failed' | 'cancelled'>;

/**
 * The fan-in of a QC run, in one transaction (a retried fan-in does it all again): study-level
 * rules (uniqueness, consistency, outliers, orphan records: in an SDTM run, their findings stored
 * while the children ran, see study-checks.ts), exclusions, the comparison with the study's
 * previous complete run (new, still open, resolved), the discrepancies that live across runs, and
 * each rule's result.
 *
 * A discrepancy is resolved only by a run that checked it and no longer finds it: its rule ran
 * without error (for a record- or subject-level rule: on its subject, whose child succeeded), so a
 * run cancelled halfway or with failed children resolves nothing it did not look at. The fan-ins
 * of one study take turns, and one whose run is older than a run already settled leaves the
 * study's discrepancies as the newer run settled them.
 */
export async function finishRun(pool: pg.Pool, task: RunEnding): Promise<RunSummary> {
  const taskId = task.id;
  const ctx = await runContext(pool, taskId);
  const complete = task.status === 'completed' && task.failed === 0 && task.cancelled === 0;
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    // First, before this transaction locks the run's row: the early checks write to it while
    // they hold their lock.
    const studyErrors = await studyChecksAtFanIn(client, ctx);
    // The study's fan-ins take turns (each reads what the last settled).
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`iit_qc_settle:${ctx.studyId}`]);
    // A fan-in of an earlier round that comes after a later round's (its lease lapsed while it
    // stalled) changes nothing: the later round settled the run.
    const current = await client.query<{ settled_round: number; summary: RunSummary }>('SELECT settled_round, summary FROM qc_run WHERE task_id = $1 FOR UPDATE', [taskId]);
    if ((current.rows[0]?.settled_round ?? 0) > task.round) {
      await client.query('ROLLBACK');
      return current.rows[0]!.summary;
    }
    await client.query("UPDATE qc_run SET stage = 'finishing', complete = $2 WHERE task_id = $1", [taskId, complete]);
    const previous = await client.query<{ task_id: string }>(
      "SELECT task_id FROM qc_run WHERE study_id = $1 AND stage = 'done' AND complete AND task_id <> $2 AND created_at <= (SELECT created_at FROM qc_run WHERE task_id = $2) ORDER BY created_at DESC LIMIT 1",
      [ctx.studyId, taskId],
    );
    const previousRunId = previous.rows[0]?.task_id ?? null;
    const newer = await client.query<{ task_id: string }>(
      "SELECT task_id FROM qc_run WHERE study_id = $1 AND stage = 'done' AND task_id <> $2 AND created_at > (SELECT created_at FROM qc_run WHERE task_id = $2) ORDER BY created_at DESC LIMIT 1",
      [ctx.studyId, taskId],
    );
    const supersededBy = newer.rows[0]?.task_id ?? null;
    // Each finding new or still open against the previous run, and, in the same pass (one new
    // version of each row, not two), excluded when its discrepancy is: exclusions stay, a finding
    // whose discrepancy was excluded is excluded in every later run.
    await client.query(
      `UPDATE qc_finding f SET change = CASE WHEN EXISTS (SELECT 1 FROM qc_finding p WHERE p.run_id = $2 AND p.key = f.key) THEN 'open' ELSE 'new' END,
         excluded = coalesce((SELECT d.excluded_reason IS NOT NULL FROM qc_discrepancy d WHERE d.study_id = $3 AND d.key = f.key), f.excluded)
       WHERE f.run_id = $1`,
      [taskId, previousRunId, ctx.studyId],
    );
    // Each rule's result.
    await client.query('DELETE FROM qc_rule_result WHERE run_id = $1', [taskId]);
    const counts = await client.query<{ rule_id: string; issues: number; excluded: number; subjects: number }>(
      'SELECT rule_id, count(*) FILTER (WHERE NOT excluded)::int AS issues, count(*) FILTER (WHERE excluded)::int AS excluded, count(DISTINCT subject)::int AS subjects FROM qc_finding WHERE run_id = $1 GROUP BY rule_id',
      [taskId],
    );
    const errors = await client.query<{ rule_id: string; errors: number; message: string }>('SELECT rule_id, sum(count)::int AS errors, min(message) AS message FROM qc_rule_error WHERE run_id = $1 GROUP BY rule_id', [taskId]);
    const countOf = new Map(counts.rows.map((r) => [r.rule_id, r]));
    const errorOf = new Map(errors.rows.map((r) => [r.rule_id, r]));
    const tally = { passed: 0, issues: 0, skipped: 0, error: 0 };
    const results = ctx.rules.map((rule) => {
      const c = countOf.get(rule.id);
      const e = errorOf.get(rule.id);
      const skippedReason = ctx.skipped.get(rule.id);
      const studyError = studyErrors.get(rule.id);
      const status = skippedReason ? 'skipped' : studyError || e ? 'error' : c && c.issues > 0 ? 'issues' : 'passed';
      tally[status === 'issues' ? 'issues' : status]++;
      return {
        rule_id: rule.id,
        level: rule.level,
        status,
        issues: c?.issues ?? 0,
        excluded: c?.excluded ?? 0,
        subjects: c?.subjects ?? 0,
        errors: e?.errors ?? (studyError ? 1 : 0),
        reason:
          skippedReason ??
          studyError ??
          (e ? `${e.errors} record(s) could not be evaluated: ${e.message}` : null) ??
          // A run cancelled or stopped halfway, or with failed children: what it says of a rule is of
          // the subjects it checked only (a "passed" is no proof for the others).
          (complete ? null : `this run did not check every subject (${task.status}${task.failed > 0 ? `, ${task.failed} failed` : ''}${task.cancelled > 0 ? `, ${task.cancelled} cancelled` : ''}): only the subjects it checked count`),
      };
    });
    // One statement for every rule's result (a round trip each was 150 for the pilot's rule set).
    await client.query(
      `INSERT INTO qc_rule_result (run_id, rule_id, level, status, issues, excluded, subjects, errors, reason)
       SELECT $1, r.rule_id, r.level, r.status, r.issues, r.excluded, r.subjects, r.errors, r.reason
       FROM jsonb_to_recordset($2::jsonb) AS r(rule_id text, level text, status text, issues int, excluded int, subjects int, errors int, reason text)`,
      [taskId, JSON.stringify(results)],
    );
    // The study's discrepancies: resolved where this run checked them and no longer finds them
    // (see `checkedByRun`), open (again) where it finds them.
    if (!supersededBy) {
      await client.query(
        `UPDATE qc_discrepancy d SET status = 'resolved', resolved_run_id = $2, updated_at = now()
         WHERE d.study_id = $1 AND d.status = 'open' AND ${checkedByRun('d', '$2')}
           AND NOT EXISTS (SELECT 1 FROM qc_finding f WHERE f.run_id = $2 AND f.key = d.key)`,
        [ctx.studyId, taskId],
      );
      await client.query(
        `INSERT INTO qc_discrepancy (study_id, key, rule_id, subject, site, domain, dataset, recno, variables, "values", message, severity, status, first_run_id, last_run_id)
         SELECT $1, key, rule_id, subject, site, domain, dataset, recno, variables, "values", message, severity, 'open', run_id, run_id FROM qc_finding WHERE run_id = $2
         ON CONFLICT (study_id, key) DO UPDATE SET status = 'open', last_run_id = EXCLUDED.last_run_id, resolved_run_id = NULL, recno = EXCLUDED.recno,
           "values" = EXCLUDED."values", message = EXCLUDED.message, severity = EXCLUDED.severity, site = EXCLUDED.site, updated_at = now()`,
        [ctx.studyId, taskId],
      );
    }
    const totals = await client.query<{ issues: number; excluded: number; new: number; open: number; subjects: number }>(
      "SELECT count(*) FILTER (WHERE NOT excluded)::int AS issues, count(*) FILTER (WHERE excluded)::int AS excluded, count(*) FILTER (WHERE change = 'new' AND NOT excluded)::int AS new, count(*) FILTER (WHERE change = 'open' AND NOT excluded)::int AS open, count(DISTINCT subject)::int AS subjects FROM qc_finding WHERE run_id = $1",
      [taskId],
    );
    // Resolved: what the previous run found (and this run checked) that this run no longer finds.
    const resolved = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM qc_finding p WHERE p.run_id = $1 AND NOT p.excluded AND ${checkedByRun('p', '$2')}
         AND NOT EXISTS (SELECT 1 FROM qc_finding f WHERE f.run_id = $2 AND f.key = p.key)`,
      [previousRunId, taskId],
    );
    const subjects = await client.query<{ n: number; checked: number }>(
      'SELECT subjects AS n, (SELECT count(*)::int FROM qc_run_subject WHERE run_id = $1) AS checked FROM qc_run WHERE task_id = $1',
      [taskId],
    );
    const t = totals.rows[0]!;
    const summary: RunSummary = {
      skipped: Object.fromEntries(ctx.skipped),
      complete,
      checkedSubjects: subjects.rows[0]?.checked ?? 0,
      supersededBy,
      subjects: subjects.rows[0]?.n ?? 0,
      issues: t.issues,
      excluded: t.excluded,
      new: t.new,
      open: t.open,
      resolved: resolved.rows[0]?.n ?? 0,
      previousRunId,
      rules: tally,
    };
    await client.query("UPDATE qc_run SET stage = 'done', summary = $2, previous_run_id = $3, finished_at = now(), settled_round = $4, complete = $5 WHERE task_id = $1", [
      taskId,
      JSON.stringify(summary),
      previousRunId,
      task.round,
      complete,
    ]);
    await client.query('COMMIT');
    forgetRun(taskId);
    return summary;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}
