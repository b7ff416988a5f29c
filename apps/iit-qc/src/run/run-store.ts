import type pg from 'pg';
import { PermanentError, type InputIssue } from '@fanout/core';
import type { Column, Row } from '../data/table.ts';
import { TRIAL_DESIGN } from '../data/sdtm-domains.ts';
import { compileSpec, type CompiledRuleSpec } from '../rules/rule-set.ts';
import type { RuleSpec } from '../rules/spec.ts';
import { skippedRules, type Finding, type RecordRef, type RuleTally, type SubjectData } from '../rules/engine.ts';

/** A dataset as a run froze it: which version (id), its hash, and whether it holds subjects. */
export interface RunDataset {
  id: string;
  name: string;
  domain: string;
  sha256: string;
  records: number;
  subjects: boolean;
  columns: Column[];
}

/** What a child needs of its run, loaded once per process and run. */
export interface RunContext {
  taskId: string;
  studyId: string;
  standard: 'sdtm' | 'redcap';
  ruleSetId: string;
  maxIssuesPerRule: number;
  datasets: RunDataset[];
  rules: CompiledRuleSpec[];
  /** The rules children evaluate (record and subject level, not skipped). */
  childRules: CompiledRuleSpec[];
  skipped: Map<string, string>;
  trial: Record<string, Row[]>;
}

interface RunRow {
  task_id: string;
  study_id: string;
  tenant: string;
  rule_set_id: string;
  datasets: RunDataset[];
  summary: { skipped?: Record<string, string> } | null;
  standard: 'sdtm' | 'redcap';
  rules: RuleSpec[];
  max_issues: number | null;
}

/**
 * A run's input as a submit checks it (the definition's `checkInput`): the study is the tenant's
 * and the rule set is that study's. The manager's snapshot checks again.
 */
export async function runInputIssues(pool: pg.Pool, tenant: string, input: { studyId: string; ruleSetId: string }): Promise<InputIssue[]> {
  // Compared as uuids by PostgreSQL: an id may come in either case.
  const { rows } = await pool.query<{ study: boolean; same_study: boolean | null; data: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM qc_study WHERE id = $1 AND tenant = $2) AS study,
            (SELECT study_id = $1::uuid FROM qc_rule_set WHERE id = $3 AND tenant = $2) AS same_study,
            EXISTS (SELECT 1 FROM qc_dataset WHERE study_id = $1 AND current AND format <> ALL($4::text[])) AS data`,
    [input.studyId, tenant, input.ruleSetId, METADATA_FORMATS],
  );
  const { study, same_study: sameStudy, data } = rows[0]!;
  if (!study) return [{ field: 'studyId', rule: 'not_found', message: `no study ${input.studyId} (of yours)` }];
  const issues: InputIssue[] = [];
  // Its manager would refuse it as well (snapshotRun): said at once instead of as a failed run.
  if (!data) issues.push({ field: 'studyId', rule: 'no_data', message: 'the study has no datasets to check: upload them first' });
  if (sameStudy === null) issues.push({ field: 'ruleSetId', rule: 'not_found', message: `no rule set ${input.ruleSetId} (of yours)` });
  else if (!sameStudy) issues.push({ field: 'ruleSetId', rule: 'other_study', message: 'not a rule set of this study (a rule set belongs to one study: choose one of its own)' });
  return issues;
}

/** A run as lists name it: its study and its rule set's version ("CDISCPILOT01 · pilot rules v2"). */
export async function runLabel(pool: pg.Pool, tenant: string | null, input: { studyId: string; ruleSetId: string }): Promise<string> {
  const { rows } = await pool.query<{ study: string | null; rules: string | null }>(
    `SELECT (SELECT name FROM qc_study WHERE id = $1 AND tenant = $3) AS study,
            (SELECT name || ' v' || version FROM qc_rule_set WHERE id = $2 AND tenant = $3) AS rules`,
    [input.studyId, input.ruleSetId, tenant],
  );
  const { study, rules } = rows[0]!;
  return study && rules ? `QC run: ${study} · ${rules}` : 'QC run';
}

/** What a run does not check (the study's metadata): left out of the datasets a run needs. */
const METADATA_FORMATS = ['define', 'dictionary'];

/** Whether the run's manager prepared it (its snapshot): one whose manager failed first never was. */
export async function runPrepared(pool: pg.Pool, taskId: string): Promise<boolean> {
  const { rows } = await pool.query('SELECT 1 FROM qc_run WHERE task_id = $1', [taskId]);
  return rows.length > 0;
}

/**
 * The manager's snapshot: the rule set version and the current version of every dataset (with its
 * hash), and which rules the data cannot run. Written once: a retried manager reads back what the
 * first attempt froze, so every child of the run sees the same data.
 */
export async function snapshotRun(pool: pg.Pool, taskId: string, tenant: string, input: { studyId: string; ruleSetId: string }): Promise<RunRow> {
  const study = await pool.query<{ id: string; standard: 'sdtm' | 'redcap' }>('SELECT id, standard FROM qc_study WHERE id = $1 AND tenant = $2', [input.studyId, tenant]);
  if (!study.rows[0]) throw new PermanentError(`study ${input.studyId} is not one of yours`, { code: 'study_not_found' });
  const ruleSet = await pool.query<{ id: string; rules: { rules: RuleSpec[] } }>('SELECT id, rules FROM qc_rule_set WHERE id = $1 AND study_id = $2', [input.ruleSetId, input.studyId]);
  if (!ruleSet.rows[0]) throw new PermanentError(`rule set ${input.ruleSetId} is not a rule set of this study`, { code: 'rule_set_not_found' });
  const datasets = await pool.query<{ id: string; name: string; domain: string; sha256: string; records: number; columns: Column[] }>(
    'SELECT id, name, domain, sha256, records, columns FROM qc_dataset WHERE study_id = $1 AND current AND format <> ALL($2::text[]) ORDER BY name',
    [input.studyId, METADATA_FORMATS],
  );
  if (datasets.rows.length === 0) throw new PermanentError('the study has no datasets to check: upload them first', { code: 'no_data' });
  const snapshot: RunDataset[] = datasets.rows.map((d) => ({ ...d, subjects: !TRIAL_DESIGN.has(d.domain) }));
  // What the data cannot run is read from the rules' text (their scope and the variables they
  // name): no need to compile them here, the children and the fan-in do.
  const skipped = skippedRules(ruleSet.rows[0].rules.rules, snapshot, study.rows[0].standard);
  await pool.query(
    `INSERT INTO qc_run (task_id, study_id, tenant, rule_set_id, datasets, subjects, stage, summary)
     VALUES ($1, $2, $3, $4, $5, 0, 'preparing', $6) ON CONFLICT (task_id) DO NOTHING`,
    [taskId, input.studyId, tenant, input.ruleSetId, JSON.stringify(snapshot), JSON.stringify({ skipped: Object.fromEntries(skipped) })],
  );
  return (await loadRunRow(pool, taskId))!;
}

async function loadRunRow(pool: pg.Pool | pg.PoolClient, taskId: string): Promise<RunRow | null> {
  const { rows } = await pool.query<RunRow>(
    `SELECT r.task_id, r.study_id, r.tenant, r.rule_set_id, r.datasets, r.summary, s.standard, rs.rules->'rules' AS rules, (rs.rules->>'maxIssuesPerRule')::int AS max_issues
     FROM qc_run r JOIN qc_study s ON s.id = r.study_id JOIN qc_rule_set rs ON rs.id = r.rule_set_id WHERE r.task_id = $1`,
    [taskId],
  );
  return rows[0] ?? null;
}

/** The subjects of a run, in order, with their site: DM's subjects (SDTM) or the records (REDCap). */
export async function* runSubjects(pool: pg.Pool, run: { standard: 'sdtm' | 'redcap'; datasets: RunDataset[] }): AsyncGenerator<{ subject: string; site: string | null }[]> {
  const dm = run.datasets.filter((d) => d.domain === 'DM').map((d) => d.id);
  const ids = run.standard === 'sdtm' ? dm : run.datasets.filter((d) => d.subjects).map((d) => d.id);
  if (ids.length === 0) throw new PermanentError('the study has no DM dataset: subjects are listed from DM', { code: 'no_subjects' });
  let after = '';
  for (;;) {
    const { rows } = await pool.query<{ subject: string; site: string | null }>(
      `SELECT subject, min(coalesce(data->>'SITEID', data->>'redcap_data_access_group')) AS site FROM qc_record
       WHERE dataset_id = ANY($1::uuid[]) AND subject IS NOT NULL AND subject > $2 GROUP BY subject ORDER BY subject LIMIT 1000`,
      [ids, after],
    );
    if (rows.length === 0) return;
    yield rows.map((r) => ({ subject: r.subject, site: r.site || null }));
    after = rows.at(-1)!.subject;
  }
}

const contexts = new Map<string, Promise<RunContext>>();

/** The run's context, loaded once per process (the last few runs are kept). */
export function runContext(pool: pg.Pool, taskId: string): Promise<RunContext> {
  let ctx = contexts.get(taskId);
  if (!ctx) {
    ctx = loadContext(pool, taskId);
    ctx.catch(() => contexts.delete(taskId));
    contexts.set(taskId, ctx);
    while (contexts.size > 4) contexts.delete(contexts.keys().next().value!);
  }
  return ctx;
}

/**
 * Drops a run's context from this process once its fan-in is done: its compiled rules and trial
 * design serve no child any more (a retry of failed items loads them again).
 */
export function forgetRun(taskId: string): void {
  contexts.delete(taskId);
}

async function loadContext(pool: pg.Pool, taskId: string): Promise<RunContext> {
  const row = await loadRunRow(pool, taskId);
  if (!row) throw new PermanentError(`run ${taskId} has no snapshot`, { code: 'run_not_found' });
  const rules = row.rules.map(compileSpec);
  const skipped = new Map(Object.entries(row.summary?.skipped ?? {}));
  const trialIds = row.datasets.filter((d) => !d.subjects).map((d) => d.id);
  const trial: Record<string, Row[]> = {};
  if (trialIds.length > 0) {
    const { rows } = await pool.query<{ domain: string; data: Row }>('SELECT d.domain, r.data FROM qc_record r JOIN qc_dataset d ON d.id = r.dataset_id WHERE r.dataset_id = ANY($1::uuid[]) ORDER BY d.name, r.recno', [trialIds]);
    for (const r of rows) (trial[r.domain] ??= []).push(r.data);
  }
  return {
    taskId,
    studyId: row.study_id,
    standard: row.standard,
    ruleSetId: row.rule_set_id,
    maxIssuesPerRule: row.max_issues ?? 1000,
    datasets: row.datasets,
    rules,
    childRules: rules.filter((r) => r.level !== 'study' && !skipped.has(r.id)),
    skipped,
    trial,
  };
}

/** One subject's records of the run's datasets, in dataset and record order. */
export async function loadSubject(pool: pg.Pool, ctx: RunContext, subject: string, site: string | null): Promise<SubjectData> {
  const subjectDatasets = ctx.datasets.filter((d) => d.subjects);
  const { rows } = await pool.query<{ dataset_id: string; recno: number; data: Row }>('SELECT dataset_id, recno, data FROM qc_record WHERE subject = $1 AND dataset_id = ANY($2::uuid[]) ORDER BY dataset_id, recno', [
    subject,
    subjectDatasets.map((d) => d.id),
  ]);
  const byId = new Map(subjectDatasets.map((d) => [d.id, d]));
  const records: RecordRef[] = rows.map((r) => {
    const d = byId.get(r.dataset_id)!;
    return { dataset: d.name, domain: d.domain, recno: r.recno, row: r.data };
  });
  records.sort((a, b) => (a.dataset === b.dataset ? a.recno - b.recno : a.dataset < b.dataset ? -1 : 1));
  const subjectRow = records.find((r) => r.domain === 'DM')?.row ?? records[0]?.row ?? {};
  return { subject, site, subjectRow, records };
}

const FINDING_COLUMNS = ['key', 'rule_id', 'level', 'subject', 'site', 'domain', 'dataset', 'recno', 'variables', 'values', 'message', 'severity'] as const;

/** Findings inserted per statement. */
const FINDINGS_PAGE = 2000;

/** The rows of a JSON array of findings ($n), for an INSERT ... SELECT. */
const findingRows = (param: string) => `SELECT t.key, t.rule_id, t.level, t.subject, t.site, t.domain, t.dataset, t.recno,
              ARRAY(SELECT jsonb_array_elements_text(t.variables)), ARRAY(SELECT jsonb_array_elements_text(t.vals)), t.message, t.severity
       FROM jsonb_to_recordset(${param}::jsonb) AS t(key text, rule_id text, level text, subject text, site text, domain text, dataset text, recno int, variables jsonb, vals jsonb, message text, severity text)`;

const findingsJson = (findings: readonly Finding[]) =>
  JSON.stringify(
    findings.map((f) => ({ key: f.key, rule_id: f.ruleId, level: f.level, subject: f.subject, site: f.site, domain: f.domain, dataset: f.dataset, recno: f.recno, variables: f.variables, vals: f.values, message: f.message, severity: f.severity })),
  );

/** Inserts findings of a run (a page at a time); a finding already there (same key) is kept. */
export async function insertFindings(db: pg.PoolClient, runId: string, findings: readonly Finding[]): Promise<void> {
  for (let i = 0; i < findings.length; i += FINDINGS_PAGE) {
    await db.query(`INSERT INTO qc_finding (run_id, ${FINDING_COLUMNS.join(', ')}) SELECT $1, f.* FROM (${findingRows('$2')}) f ON CONFLICT (run_id, key) DO NOTHING`, [
      runId,
      findingsJson(findings.slice(i, i + FINDINGS_PAGE)),
    ]);
  }
}

// A subject's save in one statement: what an earlier attempt stored goes, its findings (a first
// page) and rule errors come in, and the subject is recorded as checked. The inserts read the count
// of the deletes, so each delete has run to its end before its insert starts: the rows it deleted
// are this transaction's, and a key they held is free again for the insert. All of it only while
// the run is open to this round's saves: the run's row, share-locked, has not been settled by this
// round's fan-in (or a later one). A save that waits on the fan-in's lock sees its outcome.
const SAVE_SUBJECT = `WITH run AS (SELECT 1 FROM qc_run WHERE task_id = $1 AND settled_round < $5 FOR SHARE),
     gone AS (DELETE FROM qc_finding WHERE run_id = $1 AND subject = $2 AND level <> 'study' AND EXISTS (SELECT 1 FROM run) RETURNING 1),
     gone_errors AS (DELETE FROM qc_rule_error WHERE run_id = $1 AND subject = $2 AND EXISTS (SELECT 1 FROM run) RETURNING 1),
     checked AS (INSERT INTO qc_run_subject (run_id, subject) SELECT $1, $2 WHERE EXISTS (SELECT 1 FROM run) ON CONFLICT DO NOTHING),
     errors AS (
       INSERT INTO qc_rule_error (run_id, subject, rule_id, count, message)
       SELECT $1, $2, e.rule_id, e.count, e.message FROM jsonb_to_recordset($4::jsonb) AS e(rule_id text, count int, message text)
       WHERE (SELECT count(*) FROM gone_errors) >= 0 AND EXISTS (SELECT 1 FROM run)),
     found AS (
       INSERT INTO qc_finding (run_id, ${FINDING_COLUMNS.join(', ')})
       SELECT $1, f.* FROM (${findingRows('$3')}) f WHERE (SELECT count(*) FROM gone) >= 0 AND EXISTS (SELECT 1 FROM run)
       ON CONFLICT (run_id, key) DO NOTHING)
     SELECT EXISTS (SELECT 1 FROM run) AS saved`;

/**
 * A child's outcome, atomically: whatever an earlier attempt of this subject stored is replaced, so
 * a retry after a crash leaves neither duplicates nor gaps. One statement (one round trip) unless
 * the subject has more findings than a page, then one transaction. `round` is the child's: once
 * the fan-in of that round settled the run, a late save (a worker that lost its lease and went on)
 * stores nothing and returns false, as does a save for a run that is not there.
 */
export async function saveSubject(pool: pg.Pool, runId: string, round: number, subject: string, findings: readonly Finding[], tallies: ReadonlyMap<string, RuleTally>): Promise<boolean> {
  const errors = JSON.stringify([...tallies].map(([ruleId, tally]) => ({ rule_id: ruleId, count: tally.errors, message: tally.firstError ?? '' })));
  if (findings.length <= FINDINGS_PAGE) {
    const { rows } = await pool.query<{ saved: boolean }>(SAVE_SUBJECT, [runId, subject, findingsJson(findings), errors, round]);
    return rows[0]!.saved;
  }
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<{ saved: boolean }>(SAVE_SUBJECT, [runId, subject, findingsJson(findings.slice(0, FINDINGS_PAGE)), errors, round]);
    const saved = rows[0]!.saved;
    if (saved) await insertFindings(client, runId, findings.slice(FINDINGS_PAGE));
    await client.query('COMMIT');
    return saved;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}
