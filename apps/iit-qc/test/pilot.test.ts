import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from '@fanout/testdb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readXpt } from '../src/data/xpt.ts';
import { loadPilot, PILOT, PILOT_RULES, qcTest, type QcTest } from './harness.ts';
import { readP21Report, type P21Report } from './p21-report.ts';

describe('the CDISC pilot study against its Pinnacle 21 report', () => {
  let t: QcTest;
  let studyId: string;
  let ruleSetId: string;
  let runId: string;
  let report: P21Report;
  let expanded: any[];
  let workers: Awaited<ReturnType<QcTest['workers']>>;

  beforeAll(async () => {
    t = await qcTest();
    await t.api();
    workers = await t.workers(2);
    report = await readP21Report(join(PILOT, 'pinnacle21-report-2018-10-08T09-48.xlsx'));
    studyId = await loadPilot(t);
    ruleSetId = await t.ruleSet(studyId, readFileSync(PILOT_RULES, 'utf8'));
    expanded = (await t.json('GET', `/rule-sets/${ruleSetId}`)).expanded;
    runId = await t.run(studyId, ruleSetId);
    await t.waitRun(runId, 180_000);
  }, 300_000);

  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
  });

  it('stores every dataset, typed, with its record count and hash', async () => {
    const study = await t.json('GET', `/studies/${studyId}`);
    const records = Object.fromEntries(study.datasets.map((d: any) => [d.name, d.records]));
    expect(records).toMatchObject({ DM: 306, AE: 961, LBCH: 32740, LBHE: 21927, LBUR: 4913, VS: 29643, SV: 3559, TV: 21 });
    for (const d of study.datasets) expect(d.sha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it('gives one item per subject of DM: 306', async () => {
    const task = await t.json('GET', `/tasks/${runId}`);
    expect(task.total).toBe(306);
    expect(task.succeeded).toBe(306);
  });

  it('counts what Pinnacle 21 counts, for every rule the two have in common', async () => {
    const rules = await t.rules(runId);
    const findings = await t.findings(runId);
    const domains = new Set((await t.json('GET', `/studies/${studyId}`)).datasets.map((d: any) => d.domain).filter(Boolean));
    const ours = new Map<string, number>();
    const compared: string[] = [];
    for (const rule of expanded) {
      const p21 = rule.references?.p21;
      if (!p21) continue;
      const result = rules.get(rule.id)!;
      expect(result.status, `${rule.id}: ${result.reason}`).not.toBe('error');
      if (result.status === 'skipped') continue;
      const scopes = rule.scope === '*' ? [...domains] : rule.scope.split(',');
      for (const domain of scopes) {
        if (!domains.has(domain)) continue;
        const n = findings.filter((f) => f.ruleId === rule.id && f.domain === domain).length;
        ours.set(`${domain}|${p21}`, (ours.get(`${domain}|${p21}`) ?? 0) + n);
      }
    }
    for (const [key, count] of ours) {
      const [, p21] = key.split('|');
      expect(report.rules.has(p21!), `${p21} is a rule of the report`).toBe(true);
      expect({ key, count }).toEqual({ key, count: report.found.get(key) ?? 0 });
      compared.push(`${key}=${count}`);
    }
    expect(ours.get('DM|SD2236')).toBe(12);
    expect(ours.get('AE|SD0021')).toBe(472);
    expect(new Set(findings.filter((f) => f.ruleId === 'SD0021').map((f) => f.subject)).size).toBe(165);
    console.log(`compared with Pinnacle 21: ${compared.join(', ')}`);
  });

  it('flags the same records as the report where it lists them all', async () => {
    const findings = await t.findings(runId);
    for (const rule of ['SD2236', 'SD0006', 'SD0021', 'SD0026']) {
      const listed = report.details.filter((d) => d.rule === rule && d.record !== null).map((d) => `${d.dataset}:${d.record}`).sort();
      const ourRule = expanded.filter((r) => r.references?.p21 === rule).map((r) => r.id);
      const flagged = findings.filter((f) => ourRule.includes(f.ruleId)).map((f) => `${f.dataset}:${f.recno}`).sort();
      expect(flagged, rule).toEqual(listed);
    }
  });

  let correctedRunId: string;

  it('marks exactly the corrected record resolved in a second run, and keeps every other key', async () => {
    const before = await t.findings(runId);
    const target = before.find((f) => f.ruleId === 'SD2236')!;
    // The data manager fixes that subject's ACTARMCD and uploads DM again (as CSV this time).
    const dm = await readXpt(join(PILOT, 'dm.xpt'));
    const quote = (v: unknown) => `"${v === null ? '' : String(v).replace(/"/g, '""')}"`;
    const lines = [dm.columns.map((c) => c.name).join(',')];
    for await (const row of dm.rows()) {
      if (row.USUBJID === target.subject) row.ACTARMCD = row.ARMCD ?? null;
      lines.push(dm.columns.map((c) => quote(row[c.name])).join(','));
    }
    const res = await t.upload(studyId, 'dm.csv', new TextEncoder().encode(lines.join('\n') + '\n'));
    expect(res.status).toBe(201);
    correctedRunId = await t.run(studyId, ruleSetId);
    const run = await t.waitRun(correctedRunId, 180_000);
    const after = await t.findings(correctedRunId);
    const afterKeys = new Set(after.map((f) => f.key));
    const gone = before.filter((f) => !afterKeys.has(f.key));
    expect(gone.map((f) => [f.ruleId, f.subject])).toEqual([['SD2236', target.subject]]);
    expect(after.length).toBe(before.length - 1);
    expect(run.summary).toMatchObject({ resolved: 1, new: 0, open: before.length - 1, previousRunId: runId });
    expect(after.every((f) => f.change === 'open')).toBe(true);
  }, 300_000);

  it('completes a run whose worker is SIGKILLed mid-run with the same discrepancies as an undisturbed run', async () => {
    const undisturbed = await t.findings(correctedRunId);
    const crashedRunId = await t.run(studyId, ruleSetId);
    await waitFor(async () => {
      const task = await t.json('GET', `/tasks/${crashedRunId}`);
      return task.succeeded >= 40 && task.succeeded < 250;
    }, { timeoutMs: 120_000, intervalMs: 50, message: 'the run to be under way' });
    workers[0]!.kill('SIGKILL');
    await workers[0]!.exited;
    await t.waitRun(crashedRunId, 180_000);
    const task = await t.json('GET', `/tasks/${crashedRunId}`);
    expect({ total: task.total, succeeded: task.succeeded, failed: task.failed }).toEqual({ total: 306, succeeded: 306, failed: 0 });
    const crashed = await t.findings(crashedRunId);
    const key = (f: any) => `${f.key} ${f.ruleId} ${f.subject} ${f.dataset}:${f.recno} ${f.values.join('|')}`;
    expect(crashed.length).toBe(undisturbed.length);
    expect(crashed.map(key).sort()).toEqual(undisturbed.map(key).sort());
  }, 300_000);
});
