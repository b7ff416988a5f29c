import ExcelJS from 'exceljs';
import { describe, expect, it } from 'vitest';
import { dataPath, etlTest, fileOf, json, runLoad, specText } from './harness.ts';

/** The "Problems" sheet of the workbook, read here with exceljs on its own: [problem, variables]. */
async function problems(): Promise<[string, string][]> {
  const workbook = new ExcelJS.Workbook();
  await workbook.xlsx.readFile(dataPath('medicaldata/messy_uc.xlsx'));
  const sheet = workbook.getWorksheet('Problems')!;
  const out: [string, string][] = [];
  sheet.eachRow((row, n) => {
    if (n <= 3) return; // title, blank, "Problem | Variables"
    out.push([String(row.getCell(1).value ?? '').trim(), String(row.getCell(2).value ?? '').trim()]);
  });
  return out;
}

describe('the messy spreadsheet (messy_uc.xlsx)', () => {
  it('has every problem its "Problems" sheet lists covered by the load\u2019s rejects, profile or manifest', async () => {
    const listed = await problems();
    expect(listed.length).toBeGreaterThanOrEqual(12);
    await using t = await etlTest();
    await t.api();
    await t.workers(1);
    const load = await runLoad(t, fileOf(dataPath('medicaldata/messy_uc.xlsx')), specText('messy_uc.yaml'));
    expect(load.status, load.error ?? '').toBe('published');
    const m = load.manifest!;
    const { rejects } = await json(t.call('GET', `/loads/${load.id}/rejects?limit=1000`));
    const { columns } = await json(t.call('GET', `/loads/${load.id}/profile`));
    const profile = new Map<string, any>(columns.map((c: any) => [c.column, c]));
    const rejected = (column: string, reason?: string) => rejects.filter((r: any) => r.column === column && (reason === undefined || r.reason === reason));
    const rejectedValues = (column: string) => rejected(column).map((r: any) => /"([^"]*)"/.exec(r.message)?.[1]);

    // One check per problem of the sheet, found by its first words; a problem without one fails.
    const checks: [RegExp, () => void][] = [
      [/^Categories with typos/, () => {
        // Case is not a typo (Hispanic, NOT hispanic are kept, as the codelist's value); misspellings are rejected.
        expect(rejectedValues('ethnic')).toEqual(['hispamnic']);
        expect(rejectedValues('race').sort()).toEqual(['AmerInd', 'H/API', 'Hawaiian', 'afromerican', 'afromerican']);
        expect(profile.get('ethnic').distinct).toBe(2);
      }],
      [/^text in numeric/, () => {
        expect(rejected('start_k', 'invalid_number').map((r: any) => r.raw.split(',')[19])).toEqual(['hemolyzed']);
        expect(rejected('start_plt', 'invalid_number').map((r: any) => r.raw.split(',')[17])).toEqual(['clumped']);
      }],
      [/^reding in excel dates/, () => {
        for (const c of ['dob', 'start_date']) expect(profile.get(c)).toMatchObject({ type: 'date', nulls: 0 });
        expect(profile.get('start_date').min).toBe('2021-01-12');
        expect(profile.get('dob').min >= '1930-01-01').toBe(true);
      }],
      [/^unifying split columns/, () => {
        expect(profile.get('end_date')).toMatchObject({ type: 'date', nulls: 0, min: '2021-06-14' });
        expect(profile.get('address').top[0].value).toMatch(/^\S.*, .*, .*, \d{5}$/);
      }],
      [/^separating data/, () => {
        for (const c of ['start_sbp', 'start_dbp', 'pre_wt_kg', 'post_wt_kg']) expect(profile.get(c)).toMatchObject({ type: 'number', nulls: 0 });
        expect(Number(profile.get('start_sbp').min)).toBeGreaterThan(Number(profile.get('start_dbp').min));
      }],
      [/^Extra header lines/, () => {
        // The header is row 7; the first data row is row 8 and keeps that number.
        expect(m.rowsIn).toBe(31);
        expect(Math.min(...rejects.map((r: any) => r.line))).toBeGreaterThanOrEqual(8);
      }],
      [/^Start Abd score/, () => {
        // The long names map to clean ones in the spec.
        expect(profile.has('start_abd') && profile.has('start_dl')).toBe(true);
        expect(m.unmappedColumns).toEqual([]);
      }],
      [/^add units/, () => {
        expect(profile.get('bp_unit').top).toEqual([{ value: 'mm[Hg]', count: m.rows }]);
        expect(profile.get('wbc_unit').top).toEqual([{ value: '10*9/L', count: m.rows }]);
      }],
      [/^encoded meaning -99/, () => {
        expect(profile.get('end_na').nulls).toBe(1);
        expect(profile.get('end_k').nulls).toBe(1);
        expect(Number(profile.get('end_na').min)).toBeGreaterThan(0);
      }],
      [/^out of range values/, () => {
        expect(rejected('start_wbc', 'rule:wbc_range').map((r: any) => r.raw.split(',')[16])).toEqual(['106']);
        expect(rejected('start_plt', 'rule:plt_range').map((r: any) => r.raw.split(',')[17])).toEqual(['1550']);
      }],
      [/^missing values/, () => {
        // "not done" is a null token of these columns: never a reject of its own. Its row (patient
        // 015) is rejected for its race alone, so its nulls are not in the published profile.
        const notDone = rejects.filter((r: any) => r.raw.includes('not done'));
        expect(notDone.map((r: any) => [r.line, r.column, r.reason])).toEqual([[22, 'race', 'codelist']]);
        expect([...rejected('end_emo'), ...rejected('end_dl')]).toEqual([]);
      }],
      [/^empty rows and columns/, () => {
        expect(m.blank).toBe(1);
        expect(m.emptyColumns).toEqual(['(column 7, no name)']);
      }],
      [/^extraneous color coding/, () => {
        // Colours carry no data (the sheet says they need no fix): treatments are the codelist's.
        expect(profile.get('treatment').distinct).toBe(3);
        expect(rejected('treatment')).toEqual([]);
      }],
    ];
    for (const [problem, variables] of listed) {
      const check = checks.find(([pattern]) => pattern.test(problem));
      expect(check, `a check for the listed problem "${problem}" (${variables})`).toBeDefined();
      check![1]();
    }
    // Every row is accounted for: 30 patients and one empty row.
    expect(m.clean + m.rejected + m.blank).toBe(m.rowsIn);
  });
});
