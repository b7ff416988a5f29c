import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finishRun } from '../src/run/finish.ts';
import { startStudyChecks } from '../src/run/study-checks.ts';
import { HIT_PAGE } from '../src/run/study-rules.ts';
import { qcTest, type QcTest } from './harness.ts';

// The fan-in reads a study-level rule's hits a page at a time: these rules flag more records than
// a page holds, and every one of them must come out once, with its subject's site.
const SUBJECTS = Array.from({ length: 20 }, (_, i) => ({ id: `S-${String(i + 1).padStart(2, '0')}`, site: i % 2 === 0 ? '701' : '702' }));
const SAME_TERM = 60;
const ORPHANS = 30;
const ORPHAN_RECORDS = 36;

const RULES = `name: fan-in pages
rules:
  - id: AE-DUP
    scope: AE
    level: study
    kind: unique
    severity: warning
    message: The same adverse event twice for a subject
    params: { keys: [USUBJID, AETERM] }
  - id: ORPHAN
    scope: '*'
    level: study
    kind: orphan
    severity: error
    message: Subject is not present in DM domain
`;

describe('the fan-in pages what a study-level rule flags', () => {
  let t: QcTest;
  let runId: string;

  beforeAll(async () => {
    t = await qcTest();
    await t.api();
    await t.workers(1);
    const studyId = await t.study('many study-level findings', 'sdtm');
    const dm = ['USUBJID,SUBJID,SITEID', ...SUBJECTS.map((s, i) => `${s.id},${1000 + i},${s.site}`)].join('\n');
    const ae = ['USUBJID,AESEQ,AETERM'];
    for (const s of SUBJECTS) for (let seq = 1; seq <= SAME_TERM; seq++) ae.push(`${s.id},${seq},HEADACHE`);
    for (let o = 1; o <= ORPHANS; o++) for (let seq = 1; seq <= ORPHAN_RECORDS; seq++) ae.push(`O-${String(o).padStart(2, '0')},${seq},NAUSEA ${seq}`);
    for (const [name, text] of [['dm.csv', dm], ['ae.csv', ae.join('\n')]] as const) {
      expect((await t.upload(studyId, name, new TextEncoder().encode(text))).status).toBe(201);
    }
    runId = await t.run(studyId, await t.ruleSet(studyId, RULES));
    await t.waitRun(runId);
  }, 180_000);

  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
  });

  it('records every duplicate, over more than one page, each with its subject site from DM', async () => {
    const expected = SUBJECTS.length * (SAME_TERM - 1);
    expect(expected).toBeGreaterThan(HIT_PAGE);
    const findings = await t.findings(runId, { rule: 'AE-DUP' });
    expect(findings).toHaveLength(expected);
    expect(new Set(findings.map((f) => f.key)).size).toBe(expected);
    const siteOf = new Map(SUBJECTS.map((s) => [s.id, s.site]));
    for (const f of findings) expect([f.subject, f.site]).toEqual([f.subject, siteOf.get(f.subject)]);
    expect((await t.rules(runId)).get('AE-DUP')).toMatchObject({ status: 'issues', issues: expected, subjects: SUBJECTS.length });
  });

  it('records every record of a subject missing from DM, over more than one page, without a site', async () => {
    const expected = ORPHANS * ORPHAN_RECORDS;
    expect(expected).toBeGreaterThan(HIT_PAGE);
    const findings = await t.findings(runId, { rule: 'ORPHAN' });
    expect(findings).toHaveLength(expected);
    expect(new Set(findings.map((f) => `${f.subject}|${f.recno}`)).size).toBe(expected);
    expect(findings.every((f) => f.subject.startsWith('O-') && f.site === null)).toBe(true);
  });

  it('ran the study-level checks while the children ran, with the outcome the fan-in gets running them itself', async () => {
    const pool: pg.Pool = t.rt.ctx.services.pool;
    const studyChecks = async () => (await pool.query('SELECT study_checks FROM qc_run WHERE task_id = $1', [runId])).rows[0].study_checks;
    const outcome = async () => ({
      findings: (await pool.query(`SELECT key, rule_id, subject, site, domain, dataset, recno, variables, "values", message, severity, excluded, change FROM qc_finding WHERE run_id = $1 AND level = 'study' ORDER BY key`, [runId])).rows,
      rules: (await pool.query('SELECT rule_id, status, issues, excluded, subjects, errors, reason FROM qc_rule_result WHERE run_id = $1 ORDER BY rule_id', [runId])).rows,
      summary: (await pool.query('SELECT summary FROM qc_run WHERE task_id = $1', [runId])).rows[0].summary,
    });
    expect(await studyChecks()).toEqual({ errors: {} });
    const early = await outcome();
    expect(early.findings).toHaveLength(SUBJECTS.length * (SAME_TERM - 1) + ORPHANS * ORPHAN_RECORDS);

    // Without the early outcome (it failed, or its process died), the fan-in runs the checks itself.
    await pool.query('UPDATE qc_run SET study_checks = NULL WHERE task_id = $1', [runId]);
    await pool.query("DELETE FROM qc_finding WHERE run_id = $1 AND level = 'study'", [runId]);
    await finishRun(pool, { id: runId, round: 1, status: 'completed', failed: 0, cancelled: 0 });
    expect(await outcome()).toEqual(early);
    // Early checks that come once the fan-in is done store nothing.
    expect(await startStudyChecks(pool, runId)).toBeNull();
    expect(await studyChecks()).toBeNull();

    // With it, the fan-in keeps the stored findings and failures and does not run the checks again.
    const kept = early.findings[0].key;
    await pool.query("DELETE FROM qc_finding WHERE run_id = $1 AND level = 'study' AND key <> $2", [runId, kept]);
    await pool.query('UPDATE qc_run SET study_checks = $2 WHERE task_id = $1', [runId, JSON.stringify({ errors: { ORPHAN: 'the check failed' } })]);
    await finishRun(pool, { id: runId, round: 1, status: 'completed', failed: 0, cancelled: 0 });
    const after = await outcome();
    expect(after.findings.map((f) => f.key)).toEqual([kept]);
    expect(after.rules.find((r) => r.rule_id === 'ORPHAN')).toMatchObject({ status: 'error', errors: 1, reason: 'the check failed' });
  });
});
