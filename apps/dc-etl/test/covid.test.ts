import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { stageTable } from '../src/load/tables.ts';
import { dataPath, etlTest, fileOf, json, runLoad, specText } from './harness.ts';

// An independent reading of the file: it has no quoted fields, so a line is a record.
const text = gunzipSync(readFileSync(dataPath('medicaldata/covid_testing_deid.csv.gz'))).toString('utf8');
const [headerLine, ...lines] = text.trimEnd().split('\n');
const header = headerLine!.split(',');
const records = lines.map((l, i) => ({ line: i + 2, row: Object.fromEntries(l.split(',').map((v, j) => [header[j]!, v])) }));
const COLUMNS = header.map((h) => `"${h}"`).join(', ');

describe('the COVID testing extract', () => {
  it('loads every record as clean or rejected whatever the chunk size, with NA as NULL, the reject rules and the dedupe an independent reading agrees with', async () => {
    expect(records).toHaveLength(15_524);
    await using t = await etlTest();
    await t.api();
    await t.workers(2);
    const file = fileOf(dataPath('medicaldata/covid_testing_deid.csv.gz'));

    // Three chunk sizes; checked but not published, so their staging tables can be compared.
    const loads = [];
    for (const chunkRecords of [20_000, 1_000, 337]) {
      const load = await runLoad(t, file, specText('covid.yaml', { publish: { auto: false } }), { chunkRecords: String(chunkRecords) });
      expect(load.status, load.error ?? '').toBe('ready');
      expect(load.manifest).toMatchObject({ chunks: Math.ceil(15_524 / chunkRecords), rowsIn: 15_524, clean: 15_518, rejected: 6, blank: 0 });
      loads.push(load);
    }
    const staged = [];
    for (const load of loads) {
      const { rows } = await t.pool.query(`SELECT _line, ${COLUMNS} FROM ${stageTable(load.id)} ORDER BY _line`);
      expect(rows).toHaveLength(15_518);
      staged.push(JSON.stringify(rows));
    }
    expect(staged[1]).toBe(staged[0]);
    expect(staged[2]).toBe(staged[0]);

    // NA is NULL: every NA of the file is a NULL in staging or in one of the rejected rows.
    const isRejected = (r: (typeof records)[number]) => Number(r.row.age) > 100 || Number(r.row.rec_ver_tat) < 0;
    const na = (col: string, of = records) => of.filter((r) => r.row[col] === 'NA').length;
    expect([na('ct_result'), na('payor_group'), na('patient_class')]).toEqual([209, 7_087, 7_077]);
    const rejectedRecords = records.filter(isRejected);
    const nulls = await t.pool.query(
      `SELECT count(*) FILTER (WHERE ct_result IS NULL)::int AS ct, count(*) FILTER (WHERE payor_group IS NULL)::int AS payor, count(*) FILTER (WHERE patient_class IS NULL)::int AS class FROM ${stageTable(loads[0]!.id)}`,
    );
    const { ct, payor, class: klass } = nulls.rows[0];
    expect([ct + na('ct_result', rejectedRecords), payor + na('payor_group', rejectedRecords), klass + na('patient_class', rejectedRecords)]).toEqual([209, 7_087, 7_077]);
    // And no other value became NULL: the file has no empty fields in these columns.
    expect(records.filter((r) => r.row.payor_group === '').length).toBe(0);

    // The reject rules: age > 100 (5 rows) and rec_ver_tat < 0 (1), each with its line and text.
    const expected = records
      .filter(isRejected)
      .map((r) => ({ line: r.line, reason: Number(r.row.age) > 100 ? 'rule:age_max' : 'rule:rec_ver_tat_min', raw: lines[r.line - 2] }));
    expect(expected.filter((e) => e.reason === 'rule:age_max')).toHaveLength(5);
    expect(expected.filter((e) => e.reason === 'rule:rec_ver_tat_min')).toHaveLength(1);
    for (const load of loads) {
      const { rejects } = await json(t.call('GET', `/loads/${load.id}/rejects`));
      expect(rejects.map((r: any) => ({ line: r.line, reason: r.reason, raw: r.raw }))).toEqual(expected);
    }
    const reasons = await json(t.call('GET', `/loads/${loads[1]!.id}/reasons`));
    expect(reasons.reasons.map((r: any) => [r.reason, r.column, r.rows])).toEqual([
      ['rule:age_max', 'age', 5],
      ['rule:rec_ver_tat_min', 'rec_ver_tat', 1],
    ]);
    const csv = await (await t.call('GET', `/loads/${loads[1]!.id}/rejects.csv`)).text();
    expect(csv.trim().split('\r\n')).toHaveLength(7);

    // Dedupe on (subject_id, pan_day, test_id), the first by line kept: computed here from the file.
    const rejectedLines = new Set(expected.map((e) => e.line));
    const seen = new Map<string, number>();
    for (const r of records) {
      if (rejectedLines.has(r.line)) continue;
      const key = `${r.row.subject_id}|${r.row.pan_day}|${r.row.test_id}`;
      if (!seen.has(key)) seen.set(key, r.line);
    }
    const keptLines = [...seen.values()].sort((a, b) => a - b);
    expect(loads[0]!.manifest!.rows).toBe(keptLines.length);
    expect(loads[0]!.manifest!.duplicates).toBe(15_518 - keptLines.length);

    // Publishing one of them: the published table holds exactly the lines kept.
    const published = await json(t.call('POST', `/loads/${loads[2]!.id}/publish`));
    expect(published).toMatchObject({ status: 'published', published: keptLines.length });
    const target = await t.pool.query(`SELECT table_name FROM etl_target WHERE tenant = 'team-a' AND name = 'covid_tests'`);
    const pub = await t.pool.query(`SELECT _line FROM etl_pub."${target.rows[0].table_name}" ORDER BY _line`);
    expect(pub.rows.map((r) => r._line)).toEqual(keptLines);
    const dups = await json(t.call('GET', `/loads/${loads[2]!.id}/duplicates?limit=1000`));
    expect(dups.duplicates.reduce((n: number, d: any) => n + d.dropped, 0)).toBe(15_518 - keptLines.length);
    for (const d of dups.duplicates) expect(d.keptLine).toBeLessThan(Math.min(...d.droppedLines));

    // The profile of the published rows.
    const profile = await json(t.call('GET', `/loads/${loads[2]!.id}/profile`));
    const gender = profile.columns.find((c: any) => c.column === 'gender');
    expect(gender).toMatchObject({ type: 'text', rows: keptLines.length, nulls: 0, distinct: 2, min: 'female', max: 'male' });
    const age = profile.columns.find((c: any) => c.column === 'age');
    expect(Number(age.max)).toBeLessThanOrEqual(100);
  });
});
