import { waitFor } from '@fanout/testdb';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evaluateSubject } from '../src/rules/engine.ts';
import { finishRun } from '../src/run/finish.ts';
import { loadSubject, runContext, saveSubject } from '../src/run/run-store.ts';
import { qcTest, type QcTest } from './harness.ts';

// How a run's ending settles the study's discrepancies when the run did not check everything (a
// cancel), when a child's save comes after the fan-in, and when an older run's fan-in comes after
// a newer run's.

const RULES = `name: age
rules:
  - id: OLD
    scope: DM
    level: record
    severity: warning
    message: age over 50
    condition: 'row.AGE > 50'
`;

/** A DM of `n` subjects S-00000.., every one over 50 but those given another age. */
const dm = (n: number, ages: Record<number, number> = {}) =>
  new TextEncoder().encode(['USUBJID,SUBJID,SITEID,AGE', ...Array.from({ length: n }, (_, i) => `S-${String(i).padStart(5, '0')},${i},701,${ages[i] ?? 60 + (i % 5)}`)].join('\n'));

describe('run endings', () => {
  let t: QcTest;
  let pool: pg.Pool;
  const discrepancies = async (studyId: string) =>
    Object.fromEntries((await pool.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM qc_discrepancy WHERE study_id = $1 GROUP BY status', [studyId])).rows.map((r) => [r.status, r.n]));

  beforeAll(async () => {
    t = await qcTest();
    pool = t.rt.ctx.services.pool;
    await t.api();
    await t.workers(1, { FANOUT_WORKER_CONCURRENCY: 1 });
  }, 120_000);

  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
  });

  it('a cancelled run resolves only what it checked, and the next run compares with the last complete one', async () => {
    const N = 1500;
    const studyId = await t.study('cancelled halfway', 'sdtm');
    expect((await t.upload(studyId, 'dm.csv', dm(N))).status).toBe(201);
    const rs = await t.ruleSet(studyId, RULES);
    const run1 = await t.run(studyId, rs);
    expect((await t.waitRun(run1, 300_000)).summary).toMatchObject({ complete: true, checkedSubjects: N, new: N, resolved: 0 });
    expect(await discrepancies(studyId)).toEqual({ open: N });

    // The first subject's age is corrected; a run checks it and a few more, then is cancelled.
    expect((await t.upload(studyId, 'dm.csv', dm(N, { 0: 40 }))).status).toBe(201);
    const run2 = await t.run(studyId, rs);
    await waitFor(async () => ((await pool.query("SELECT count(*)::int AS n, bool_or(subject = 'S-00000') AS first FROM qc_run_subject WHERE run_id = $1", [run2])).rows[0] as { n: number; first: boolean | null }).first && true, {
      timeoutMs: 120_000,
      message: 'the first subject checked',
    });
    expect((await t.call('POST', `/tasks/${run2}/cancel`)).status).toBe(200);
    const cut = await t.waitRun(run2, 120_000);
    expect((await t.json('GET', `/tasks/${run2}`)).status, 'the run was cancelled before its end').toBe('cancelled');
    expect(cut.summary).toMatchObject({ complete: false, previousRunId: run1, resolved: 1 });
    expect(cut.summary.checkedSubjects).toBeGreaterThan(0);
    expect(cut.summary.checkedSubjects).toBeLessThan(N);
    // Only the corrected subject's discrepancy is resolved, by run 2; every subject it never
    // checked keeps its discrepancy open.
    expect(await discrepancies(studyId)).toEqual({ open: N - 1, resolved: 1 });
    expect((await pool.query("SELECT resolved_run_id FROM qc_discrepancy WHERE study_id = $1 AND status = 'resolved'", [studyId])).rows).toEqual([{ resolved_run_id: run2 }]);
    expect((await t.json('GET', `/runs/${run2}/changes`)).changes).toEqual([{ ruleId: 'OLD', new: 0, open: cut.summary.checkedSubjects - 1, resolved: 1 }]);
    // Its rules' results say they are of the subjects it checked only.
    expect((await t.rules(run2)).get('OLD')!.reason).toMatch(/^this run did not check every subject \(cancelled, \d+ cancelled\): only the subjects it checked count$/);

    // A complete run afterwards compares with run 1 (the last complete run), not with the cut one.
    const run3 = await t.run(studyId, rs);
    expect((await t.waitRun(run3, 300_000)).summary).toMatchObject({ complete: true, previousRunId: run1, new: 0, open: N - 1, resolved: 1 });
    expect((await t.rules(run3)).get('OLD')!.reason).toBeNull();
    expect(await discrepancies(studyId)).toEqual({ open: N - 1, resolved: 1 });
  });

  it("a child's save after its round's fan-in stores nothing; a later round's save does", async () => {
    const studyId = await t.study('late save', 'sdtm');
    expect((await t.upload(studyId, 'dm.csv', dm(10))).status).toBe(201);
    const rs = await t.ruleSet(studyId, RULES);
    await t.waitRun(await t.run(studyId, rs));
    const key = (await pool.query("SELECT key FROM qc_discrepancy WHERE study_id = $1 AND subject = 'S-00000'", [studyId])).rows[0].key;
    expect((await t.call('POST', `/studies/${studyId}/discrepancies/${encodeURIComponent(key)}/exclusion`, { body: { text: 'age confirmed' } })).status).toBe(200);
    const run2 = await t.run(studyId, rs);
    await t.waitRun(run2);
    const state = async () => ({
      findings: (await pool.query('SELECT key, change, excluded FROM qc_finding WHERE run_id = $1 ORDER BY key', [run2])).rows,
      rules: [...(await t.rules(run2)).values()],
      report: (await t.json('GET', `/runs/${run2}/report.json`)).issues,
    });
    const before = await state();
    expect(before.findings.filter((f) => f.excluded)).toHaveLength(1);

    // The same child again, as a worker that lost its claim and went on would run it.
    const ctx = await runContext(pool, run2);
    const data = await loadSubject(pool, ctx, 'S-00000', '701');
    const { findings, tallies } = evaluateSubject(ctx.childRules, data, ctx.trial);
    expect(await saveSubject(pool, run2, 1, 'S-00000', findings, tallies)).toBe(false);
    expect(await state()).toEqual(before);
    // A child of a later round (a retry of failed children) saves: its fan-in comes after.
    expect(await saveSubject(pool, run2, 2, 'S-00000', findings, tallies)).toBe(true);
  });

  it("an older run's fan-in that comes after a newer run's leaves the study's discrepancies as the newer one settled them", async () => {
    const studyId = await t.study('out of order', 'sdtm');
    expect((await t.upload(studyId, 'dm.csv', dm(10))).status).toBe(201);
    const rs = await t.ruleSet(studyId, RULES);
    const runA = await t.run(studyId, rs);
    await t.waitRun(runA);
    expect((await t.upload(studyId, 'dm.csv', dm(10, { 0: 40 }))).status).toBe(201);
    const runB = await t.run(studyId, rs);
    expect((await t.waitRun(runB)).summary).toMatchObject({ resolved: 1, supersededBy: null });
    const settled = (await pool.query('SELECT key, status, last_run_id, resolved_run_id FROM qc_discrepancy WHERE study_id = $1 ORDER BY key', [studyId])).rows;
    expect(settled.filter((d) => d.status === 'resolved')).toEqual([expect.objectContaining({ resolved_run_id: runB })]);

    // Run A's fan-in again (retried after a crash, or simply slower than B's).
    const summary = await finishRun(pool, { id: runA, round: 1, status: 'completed', failed: 0, cancelled: 0 });
    expect(summary).toMatchObject({ supersededBy: runB, complete: true, issues: 10 });
    expect((await pool.query('SELECT key, status, last_run_id, resolved_run_id FROM qc_discrepancy WHERE study_id = $1 ORDER BY key', [studyId])).rows).toEqual(settled);

    // A fan-in of an earlier round after a later round's (its lease lapsed while it stalled) changes nothing.
    const round2 = await finishRun(pool, { id: runB, round: 2, status: 'completed', failed: 0, cancelled: 0 });
    expect(await finishRun(pool, { id: runB, round: 1, status: 'completed', failed: 1, cancelled: 0 })).toEqual(round2);
    expect((await pool.query('SELECT settled_round, complete FROM qc_run WHERE task_id = $1', [runB])).rows[0]).toEqual({ settled_round: 2, complete: true });
  });

  it('a complete run resolves the discrepancies of a subject no longer in the data (an id corrected), which no child checks', async () => {
    const studyId = await t.study('subject gone', 'sdtm');
    const ids = (second: string) => new TextEncoder().encode(['USUBJID,SUBJID,SITEID,AGE', `S-001,1,701,61`, `${second},2,701,62`, `S-003,3,701,63`].join('\n'));
    expect((await t.upload(studyId, 'dm.csv', ids('S-0O2'))).status).toBe(201);
    const rs = await t.ruleSet(studyId, RULES);
    await t.waitRun(await t.run(studyId, rs));
    expect((await t.upload(studyId, 'dm.csv', ids('S-002'))).status).toBe(201);
    const run2 = await t.run(studyId, rs);
    expect((await t.waitRun(run2)).summary).toMatchObject({ complete: true, new: 1, open: 2, resolved: 1 });
    expect((await pool.query("SELECT subject, status FROM qc_discrepancy WHERE study_id = $1 ORDER BY subject", [studyId])).rows).toEqual([
      { subject: 'S-001', status: 'open' },
      { subject: 'S-002', status: 'open' },
      { subject: 'S-003', status: 'open' },
      { subject: 'S-0O2', status: 'resolved' },
    ]);
    expect((await t.json('GET', `/runs/${run2}/changes`)).changes).toEqual([{ ruleId: 'OLD', new: 1, open: 2, resolved: 1 }]);
  });
});
