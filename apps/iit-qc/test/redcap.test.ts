import { TEST_TOKEN } from '@fanout/kit/testing';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import ExcelJS from 'exceljs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATA, qcTest, type QcTest } from './harness.ts';

const PROJECT = join(DATA, 'redcap', 'clinical-trial-1');

/** REDCap's rules A-E and G computed here from the CSV files alone, without the app's code. */
function independentCounts(records: Record<string, string>[], dictionary: Record<string, string>[]) {
  const fields = dictionary.map((d) => ({
    name: d['Variable / Field Name']!,
    type: d['Field Type']!,
    choices: (d['Choices, Calculations, OR Slider Labels'] ?? '').split('|').map((c) => c.split(',')[0]!.trim()).filter(Boolean),
    validation: d['Text Validation Type OR Show Slider Number'] ?? '',
    min: d['Text Validation Min'] ?? '',
    max: d['Text Validation Max'] ?? '',
    required: (d['Required Field?'] ?? '').toLowerCase() === 'y',
    branching: d['Branching Logic (Show field only if...)'] ?? '',
  }));
  const checked = fields.slice(1).filter((f) => !['descriptive', 'calc', 'checkbox', 'file'].includes(f.type) && !f.branching);
  const formats: Record<string, RegExp> = { integer: /^[-+]?\d+$/, number: /^[-+]?(\d+\.?\d*|\.\d+)$/, date_ymd: /^\d{4}-\d{2}-\d{2}$/ };
  const isDate = (v: string) => formats.date_ymd!.test(v) && !Number.isNaN(Date.parse(`${v}T00:00:00Z`)) && new Date(`${v}T00:00:00Z`).toISOString().startsWith(v);
  const valid = (f: (typeof fields)[number], v: string) => (f.validation === 'date_ymd' ? isDate(v) : formats[f.validation]!.test(v));
  const counts = { A: 0, B: 0, C: 0, D: 0, E: 0, G: 0 };
  for (const r of records) {
    for (const f of checked) {
      const v = (r[f.name] ?? '').trim();
      if (v === '') {
        counts.A++;
        if (f.required) counts.B++;
        continue;
      }
      if (f.type === 'text' && f.validation in formats) {
        if (!valid(f, v)) counts.C++;
        else if (f.min !== '' || f.max !== '') {
          const below = f.validation === 'date_ymd' ? f.min !== '' && v < f.min : f.min !== '' && Number(v) < Number(f.min);
          const above = f.validation === 'date_ymd' ? f.max !== '' && v > f.max : f.max !== '' && Number(v) > Number(f.max);
          if (below || above) counts.D++;
        }
      }
      if (['radio', 'dropdown'].includes(f.type) && !f.choices.includes(v)) counts.G++;
    }
  }
  for (const f of fields.filter((x) => x.type === 'text' && ['integer', 'number'].includes(x.validation))) {
    const xs = records.map((r) => (r[f.name] ?? '').trim()).filter((v) => formats.number!.test(v)).map(Number);
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    const sd = Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (xs.length - 1));
    counts.E += xs.filter((x) => Math.abs(x - mean) > 2 * sd).length;
  }
  return counts;
}

const RULES = `name: REDCap data quality
generate:
  - from: redcap
    checks: [A, B, C, D, E, G]
`;

describe('a REDCap project: the data quality rules A-E and G', () => {
  let t: QcTest;
  const dictionaryCsv = readFileSync(join(PROJECT, 'dictionary.csv'));
  const dataCsv = readFileSync(join(PROJECT, 'data.csv'), 'utf8');
  const dictionary = parse(dictionaryCsv, { columns: true }) as Record<string, string>[];

  beforeAll(async () => {
    t = await qcTest();
    await t.api();
    await t.workers(2);
  }, 120_000);

  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
  });

  const runProject = async (name: string, csv: string) => {
    const studyId = await t.study(name, 'redcap');
    expect((await t.upload(studyId, 'dictionary.csv', dictionaryCsv, { kind: 'dictionary' })).status).toBe(201);
    const res = await t.upload(studyId, 'data.csv', new TextEncoder().encode(csv), { kind: 'records' });
    expect(res.status, await res.clone().text()).toBe(201);
    const runId = await t.run(studyId, await t.ruleSet(studyId, RULES));
    await t.waitRun(runId);
    const rules = await t.rules(runId);
    const count = (letter: string) => [...rules].filter(([id]) => id.startsWith(`REDCAP-${letter}-`)).reduce((n, [, r]) => n + r.issues, 0);
    for (const [, r] of rules) expect(r.status, r.reason ?? '').not.toBe('error');
    return { studyId, runId, counts: { A: count('A'), B: count('B'), C: count('C'), D: count('D'), E: count('E'), G: count('G') } };
  };

  it('counts on the 500-record clinical trial what an independent computation counts', async () => {
    const { runId, counts } = await runProject('clinical-trial-1', dataCsv);
    const task = await t.json('GET', `/tasks/${runId}`);
    expect(task.total).toBe(500);
    expect(counts).toEqual(independentCounts(parse(dataCsv, { columns: true }), dictionary));
    expect(counts.E).toBeGreaterThan(0);
  }, 180_000);

  it('counts blanks, wrong types, out-of-range values and invalid choices planted in a copy', async () => {
    const records = parse(dataCsv, { columns: true }) as Record<string, string>[];
    const plant: [number, string, string][] = [
      [0, 'height', ''],
      [1, 'weight', 'abc'],
      [2, 'weight', '400'],
      [3, 'race', '9'],
      [4, 'dob', '1899-12-31'],
      [5, 'dob', '31/12/1980'],
      [6, 'email', ''],
      [7, 'gender', '2'],
      [8, 'height', '-5'],
    ];
    for (const [i, field, value] of plant) records[i]![field] = value;
    const header = Object.keys(records[0]!);
    const csv = [header.join(','), ...records.map((r) => header.map((h) => `"${r[h]!.replace(/"/g, '""')}"`).join(','))].join('\n') + '\n';
    const { counts } = await runProject('clinical-trial-1 (planted errors)', csv);
    const expected = independentCounts(records, dictionary);
    expect(counts).toEqual(expected);
    expect(expected).toMatchObject({ A: 2, C: 2, D: 3, G: 2 });
  }, 180_000);

  it('keeps an exclusion in later runs, tracks a query through its statuses, and writes the report', async () => {
    const { studyId, runId } = await runProject('clinical-trial-1 (queries)', dataCsv);
    const outliers = (await t.json('GET', `/studies/${studyId}/discrepancies?rule=REDCAP-E-demographics&status=open`)).discrepancies;
    expect(outliers.length).toBeGreaterThan(1);
    const [excluded, queried] = outliers;
    const ex = await t.json('POST', `/studies/${studyId}/discrepancies/${excluded.key}/exclusion`, { text: 'confirmed with the site: a real value' });
    expect(ex).toMatchObject({ excluded: true, exclusionReason: 'confirmed with the site: a real value' });
    const q = await t.json('POST', `/studies/${studyId}/queries`, { key: queried.key, text: 'Please confirm this weight.' });
    expect(q.status).toBe('OPEN');
    expect((await t.json('POST', `/queries/${q.id}/answer`, { text: 'Confirmed on the source document.' })).status).toBe('ANSWERED');
    const closed = await t.json('POST', `/queries/${q.id}/close`, { text: 'Thanks.' });
    expect(closed.status).toBe('CLOSED');
    expect(closed.history.map((h: any) => [h.action, h.status, h.by, h.text])).toEqual([
      ['open', 'OPEN', 'team-a', 'Please confirm this weight.'],
      ['answer', 'ANSWERED', 'team-a', 'Confirmed on the source document.'],
      ['close', 'CLOSED', 'team-a', 'Thanks.'],
    ]);
    const again = await t.call('POST', `/queries/${q.id}/answer`, { body: { text: 'again' } });
    expect(again.status).toBe(409);
    expect(((await again.json()) as any).error.message).toBe('a query that is CLOSED cannot be answered (only one that is OPEN)');
    const reopen = await t.call('POST', `/queries/${q.id}/close`, { body: { text: 'twice' } });
    expect(((await reopen.json()) as any).error.message).toBe('a query that is CLOSED cannot be closed (only one that is OPEN or ANSWERED)');
    // Another tenant sees none of it.
    expect((await t.call('GET', `/queries/${q.id}`, { token: TEST_TOKEN.b })).status).toBe(404);
    expect((await t.call('GET', `/studies/${studyId}/discrepancies`, { token: TEST_TOKEN.b })).status).toBe(404);

    const ruleSetId = (await t.json('GET', `/runs/${runId}`)).ruleSetId;
    const second = await t.run(studyId, ruleSetId);
    const run = await t.waitRun(second);
    const before = (await t.rules(runId)).get('REDCAP-E-demographics')!;
    const after = (await t.rules(second)).get('REDCAP-E-demographics')!;
    expect({ issues: after.issues, excluded: (after as any).excluded }).toEqual({ issues: before.issues - 1, excluded: 1 });
    expect(run.summary).toMatchObject({ new: 0, resolved: 0, excluded: 1 });
    expect((await t.findings(second, { status: 'excluded' })).map((f) => f.key)).toEqual([excluded.key]);

    // The console's views of the run.
    const changes = (await t.json('GET', `/runs/${second}/changes`)).changes;
    expect(changes.find((ch: any) => ch.ruleId === 'REDCAP-E-demographics')).toEqual({ ruleId: 'REDCAP-E-demographics', new: 0, open: before.issues - 1, resolved: 0 });
    const sites = (await t.json('GET', `/runs/${second}/sites`)).sites;
    expect(sites).toEqual([{ site: '(none)', issues: before.issues - 1, subjects: expect.any(Number), new: 0, excluded: 1 }]);
    const cells = (await t.json('GET', `/runs/${second}/subject-rules?subject=${queried.subject}`)).cells;
    expect(cells).toEqual([{ subject: queried.subject, site: null, ruleId: 'REDCAP-E-demographics', issues: expect.any(Number), severity: 'warning' }]);
    const records = (await t.json('GET', `/runs/${second}/records?subject=${queried.subject}`)).records;
    expect(records.length).toBe(1);
    expect(JSON.parse(records[0].values).record_id).toBe(queried.subject);
    const noSubject = await t.call('GET', `/runs/${second}/records`);
    expect(noSubject.status).toBe(400);
    expect(((await noSubject.json()) as any).error.message).toBe('query.subject: required: the subject whose records to show (USUBJID, or the record id of a REDCap project) (invalid_type)');
    const pageOne = await t.json('GET', `/runs/${second}/findings?limit=2`);
    expect(pageOne.findings.length).toBe(2);
    const pageTwo = await t.json('GET', `/runs/${second}/findings?limit=2&cursor=${pageOne.nextCursor}`);
    expect(pageTwo.findings[0].key).not.toBe(pageOne.findings[1].key);
    const viaPath = await t.json('POST', `/studies/${studyId}/discrepancies/${outliers[2].key}/queries`, { text: 'From the console.' });
    expect(viaPath).toMatchObject({ status: 'OPEN', discrepancyKey: outliers[2].key });
    expect((await t.json('GET', '/queries?status=OPEN')).queries.map((x: any) => x.id)).toContain(viaPath.id);

    const json = await t.json('GET', `/runs/${second}/report.json`);
    expect(json.rules.find((r: any) => r.ruleId === 'REDCAP-E-demographics')).toMatchObject({ status: 'issues', issues: before.issues - 1 });
    expect(json.details.length).toBe(before.issues);
    const xlsx = await t.call('GET', `/runs/${second}/report.xlsx`);
    expect(xlsx.status).toBe(200);
    const wb = new ExcelJS.Workbook();
    await wb.xlsx.load(Buffer.from(await xlsx.arrayBuffer()) as any);
    expect(wb.worksheets.map((w) => w.name)).toEqual(['Dataset Summary', 'Issue Summary', 'Details', 'Rules']);
    expect(wb.getWorksheet('Details')!.rowCount).toBe(before.issues + 1);
  }, 240_000);
});
