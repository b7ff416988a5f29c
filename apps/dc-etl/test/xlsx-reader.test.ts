import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { byteLimit } from '@fanout/http';
import { createRequire } from 'node:module';
import ExcelJS from 'exceljs';
import { describe, expect, it } from 'vitest';
import { cellText, readXlsxHeader, xlsxToCsv } from '../src/source/xlsx.ts';
import { dataPath } from './harness.ts';

// exceljs's streaming reader makes one pass over the zip. Its own iteration of that stream lost
// entries now and then on a busy machine (12 reads in 3,600, six processes side by side): a
// sheet went missing ("no sheet Data"), or the shared strings did, and every text cell of a sheet
// stored before them read as `{"sharedString":3}`. The workspace patches it
// (patches/exceljs@4.4.0.patch, pnpm-workspace.yaml) to iterate the stream natively, as the fix
// proposed upstream does; 4,800 reads the same way then lost nothing.
describe('reading .xlsx workbooks as streams', () => {
  it('runs exceljs with its zip pass patched', async () => {
    const require = createRequire(import.meta.url);
    const source = await readFile(require.resolve('exceljs/lib/stream/xlsx/workbook-reader.js'), 'utf8');
    expect(source).toContain('for await (const entry of zip)');
    expect(source).not.toContain('iterateStream(zip)');
  });

  it('reads the header of sheets stored before the shared strings and after them, as a whole-workbook read does', async () => {
    // messy_uc.xlsx stores its Problems and Data sheets before xl/sharedStrings.xml, and its
    // Explainer and Codebook sheets after it.
    const path = dataPath('medicaldata/messy_uc.xlsx');
    const whole = new ExcelJS.Workbook();
    await whole.xlsx.readFile(path);
    const rowOf = (sheet: string, n: number) => {
      const cells = Array.from((whole.getWorksheet(sheet)!.getRow(n).values as unknown[]).slice(1), cellText).map((c) => c.trim());
      while (cells.length > 0 && cells[cells.length - 1] === '') cells.pop();
      return cells;
    };
    const wanted: [string, number][] = [['Data', 7], ['Problems', 3], ['Codebook', 1], ['Explainer', 1]];
    for (const [sheet, row] of wanted) expect(rowOf(sheet, row).length, `${sheet} row ${row}`).toBeGreaterThan(0);
    // Side by side, as uploads are inspected.
    const reads = await Promise.all(Array.from({ length: 8 }, () => Promise.all(wanted.map(([sheet, row]) => readXlsxHeader(path, sheet, row)))));
    for (const headers of reads) {
      expect(headers.map((h) => h.header)).toEqual(wanted.map(([sheet, row]) => rowOf(sheet, row)));
      for (const h of headers) expect(h.header.join('|')).not.toContain('sharedString');
    }
  });

  it('a read that stops at the header removes the temporary copies of the sheets and closes every file', async () => {
    // The reader copies a sheet stored before the shared strings to a temporary file and reads it
    // once they are in. A header read stops early: unpatched, those copies stayed in the
    // temporary directory with a descriptor open each until the process ended (two a read here),
    // in the API process at every workbook uploaded and in the manager at every load of one.
    const path = dataPath('medicaldata/messy_uc.xlsx');
    const copies = () => readdirSync(tmpdir()).filter((name) => name.startsWith(`tmp-${process.pid}-`));
    const openFiles = () => readdirSync('/proc/self/fd').map((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        return '';
      }
    });
    const before = openFiles().length;
    for (let i = 0; i < 10; i++) {
      await readXlsxHeader(path, 'Data', 7);
      await readXlsxHeader(path, null, 1);
      await expect(readXlsxHeader(path, 'Nope', 1)).rejects.toMatchObject({ rule: 'unknown_sheet' });
    }
    // The descriptors are closed as the streams end, a turn or two after the read returns.
    await expect.poll(() => copies(), { timeout: 5_000 }).toEqual([]);
    await expect.poll(() => openFiles().filter((target) => target.includes('messy_uc.xlsx') || target.includes(`${tmpdir()}/tmp-`)), { timeout: 5_000 }).toEqual([]);
    expect(openFiles().length).toBeLessThanOrEqual(before + 2);
  });

  it('a workbook refused while it is written out leaves no file open (the manager lives on)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'xlsx-out-'));
    try {
      for (let i = 0; i < 3; i++) {
        const out = join(dir, `source-${i}.csv`);
        await expect(xlsxToCsv(new URL('fixtures/row-gap.xlsx', import.meta.url).pathname, 'Sheet1', 1, 2, out, byteLimit(1 << 20, () => new Error('too big')))).rejects.toMatchObject({ rule: 'invalid_xlsx' });
      }
      const open = readdirSync('/proc/self/fd').map((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`);
        } catch {
          return '';
        }
      });
      expect(open.filter((target) => target.startsWith(dir))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
