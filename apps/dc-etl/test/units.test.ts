import { writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as xport from 'xport-js';
import { describe, expect, it } from 'vitest';
import { dataPath, etlTest, json, runLoad, specText } from './harness.ts';

// xport-js is CommonJS with a default export of its own.
const Library = ((xport as any).default?.default ?? (xport as any).default) as new (path: string) => {
  getMetadata(): Promise<{ name: string }[]>;
  read(options: object): AsyncIterable<unknown[]>;
};

const csvField = (v: unknown) => {
  const text = v === null || v === undefined ? '' : String(v);
  return /[",\n\r]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
};

/** The SDTM VS domain as a CSV file, the way a sponsor's export would hand it over. */
async function vsAsCsv(): Promise<{ path: string; rows: Record<string, unknown>[] }> {
  const xpt = join(tmpdir(), `vs-${process.pid}.xpt`);
  writeFileSync(xpt, gunzipSync(readFileSync(dataPath('cdiscpilot01-sdtm/vs.xpt.gz'))));
  const lib = new Library(xpt);
  const names = (await lib.getMetadata()).map((m) => m.name);
  const rows: Record<string, unknown>[] = [];
  let csv = `${names.join(',')}\n`;
  for await (const row of lib.read({ rowFormat: 'array', skipHeader: true })) {
    rows.push(Object.fromEntries(names.map((n, i) => [n, row[i]])));
    csv += `${row.map(csvField).join(',')}\n`;
  }
  const path = join(tmpdir(), `vs-${process.pid}.csv`);
  writeFileSync(path, csv);
  return { path, rows };
}

describe('unit conversion with UCUM', () => {
  it('converts the pilot study vital signs (in to cm, lb to kg, F to C) within 0.01 of the sponsor\u2019s VSSTRESN', async () => {
    const { path, rows } = await vsAsCsv();
    await using t = await etlTest();
    await t.api();
    await t.workers(1);
    const load = await runLoad(t, { name: 'vs.csv', bytes: readFileSync(path) }, specText('vs.yaml'), { chunkRecords: '5000' });
    expect(load.status, load.error ?? '').toBe('published');
    expect(load.manifest).toMatchObject({ rowsIn: rows.length, rejected: 0, duplicates: 0, published: rows.length });

    const table = (await t.pool.query(`SELECT table_name FROM etl_target WHERE name = 'vital_signs'`)).rows[0].table_name;
    const { rows: converted } = await t.pool.query(`SELECT vstestcd, value, value_unit, vsstresn, vsstresu FROM etl_pub."${table}" WHERE value IS NOT NULL`);
    const byUnit = new Map<string, number>();
    for (const r of converted) {
      expect(Math.abs(r.value - r.vsstresn), `${r.vstestcd} ${r.value} ${r.value_unit} vs ${r.vsstresn} ${r.vsstresu}`).toBeLessThanOrEqual(0.01);
      byUnit.set(`${r.vstestcd} ${r.value_unit}`, (byUnit.get(`${r.vstestcd} ${r.value_unit}`) ?? 0) + 1);
    }
    // Every measured row converted: the original units as the file has them.
    const original = (code: string, unit: string) => rows.filter((r) => r.VSTESTCD === code && r.VSORRESU === unit).length;
    expect(byUnit.get('HEIGHT cm')).toBe(original('HEIGHT', 'in') + original('HEIGHT', 'cm'));
    expect(byUnit.get('WEIGHT kg')).toBe(original('WEIGHT', 'LB') + original('WEIGHT', 'kg'));
    expect(byUnit.get('TEMP Cel')).toBe(original('TEMP', 'F') + original('TEMP', 'C'));
    expect(original('HEIGHT', 'in')).toBe(245);
    expect(original('WEIGHT', 'LB')).toBe(2_049);
    expect(original('TEMP', 'F')).toBe(2_713);
    expect(converted.length).toBe(rows.filter((r) => r.VSORRES !== '').length);

    // A unit the spec's map does not know is a reject naming it, not a wrong number.
    const csv = 'USUBJID,VSSEQ,VSTESTCD,VSORRES,VSORRESU,VSSTRESN,VSSTRESU,VSDTC\n01-1,1,HEIGHT,70,inches,177.8,cm,2014-01-02\n01-1,2,WEIGHT,150,LB,68.04,kg,2014-01-02\n01-1,3,HEIGHT,70,mol,,,2014-01-02\n';
    const bad = await runLoad(t, { name: 'vs-bad.csv', bytes: Buffer.from(csv) }, specText('vs.yaml', { target: 'vs_bad' }));
    const { rejects } = await json(t.call('GET', `/loads/${bad.id}/rejects`));
    expect(rejects.map((r: any) => [r.line, r.column, r.reason])).toEqual([
      [2, 'value', 'unknown_unit'],
      [4, 'value', 'unit_not_convertible'],
    ]);
  });
});
