import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import type { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import ExcelJS from 'exceljs';
import { SourceError } from './inspect.ts';
import { zipEntrySizes } from './zip-sizes.ts';

// exceljs's streaming reader: rows arrive one at a time, the workbook is never whole in memory.
interface StreamRow {
  number: number;
  values: unknown[];
}
interface StreamSheet extends AsyncIterable<StreamRow> {
  name: string;
  id: number;
}

function reader(path: string): AsyncIterable<StreamSheet> {
  const options = { sharedStrings: 'cache', styles: 'cache', worksheets: 'emit', hyperlinks: 'ignore', entries: 'ignore' } as const;
  return new ExcelJS.stream.xlsx.WorkbookReader(path, options as never) as unknown as AsyncIterable<StreamSheet>;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** A cell as text: dates as ISO dates (with the time when it has one), formulas as their result. */
export function cellText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) return '';
    const date = `${value.getUTCFullYear()}-${pad(value.getUTCMonth() + 1)}-${pad(value.getUTCDate())}`;
    return value.getUTCHours() || value.getUTCMinutes() || value.getUTCSeconds() ? value.toISOString() : date;
  }
  if (typeof value === 'object') {
    const v = value as { result?: unknown; richText?: { text: string }[]; text?: unknown; error?: string; formula?: string };
    if ('result' in v || 'formula' in v) return cellText(v.result);
    if (Array.isArray(v.richText)) return v.richText.map((r) => r.text).join('');
    if (v.text !== undefined) return cellText(v.text);
    if (v.error !== undefined) return v.error;
    return JSON.stringify(value);
  }
  return String(value);
}

const rowCells = (row: StreamRow, width: number) => Array.from({ length: width }, (_, i) => cellText(row.values[i + 1]));

/**
 * The most a workbook's parts that the reader keeps in memory (its shared strings and styles) may
 * inflate to: a sheet is streamed, they are not. A workbook Excel wrote with a million rows of
 * distinct text keeps well under it; a few megabytes inflating to gigabytes would take the
 * process's memory and minutes of its CPU before the first row.
 */
export const XLSX_MAX_CACHED_BYTES = 256 * 1024 * 1024;

async function checkCachedParts(path: string): Promise<void> {
  const sizes = await zipEntrySizes(path);
  if (!sizes) return; // not a zip: the reader says so
  const cached = [...sizes].filter(([name]) => /^xl\/(sharedStrings|styles)\.xml$/i.test(name)).reduce((n, [, size]) => n + size, 0);
  if (cached > XLSX_MAX_CACHED_BYTES) {
    throw new SourceError(`the workbook's shared strings and styles inflate to ${cached} bytes, over the ${XLSX_MAX_CACHED_BYTES} a workbook may hold in memory: save the sheet as CSV`, 'too_big');
  }
}

async function findSheet(path: string, name: string | null, use: (sheet: StreamSheet) => Promise<void>): Promise<string> {
  await checkCachedParts(path);
  const seen: string[] = [];
  try {
    for await (const sheet of reader(path)) {
      seen.push(sheet.name);
      // Without a name, the first sheet of the workbook (sheet id 1).
      if (name === null ? sheet.id === 1 : sheet.name === name) {
        await use(sheet);
        return sheet.name;
      }
      for await (const _ of sheet) void _; // skip its rows
    }
  } catch (error) {
    if (error instanceof SourceError) throw error;
    throw new SourceError(`the workbook cannot be read (${(error as Error).message})`, 'invalid_xlsx');
  }
  throw new SourceError(name === null ? 'the workbook has no first sheet' : `the workbook has no sheet "${name}" (its sheets: ${seen.join(', ')})`, 'unknown_sheet');
}

/** The header row of a worksheet (the first sheet, or the one named). */
export async function readXlsxHeader(path: string, sheetName: string | null, headerRow: number): Promise<{ sheet: string; header: string[] }> {
  let header: string[] | null = null;
  const sheet = await findSheet(path, sheetName, async (ws) => {
    for await (const row of ws) {
      if (row.number === headerRow) {
        const cells = Array.from(row.values.slice(1), cellText); // holes (empty cells) too
        while (cells.length > 0 && cells[cells.length - 1]!.trim() === '') cells.pop();
        header = cells.map((c) => c.trim());
        break;
      }
      if (row.number > headerRow) break;
    }
  });
  if (header === null) throw new SourceError(`the sheet "${sheet}" has no header at row ${headerRow}`, 'no_header');
  return { sheet, header };
}

const csvField = (text: string) => (/[",\n\r]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text);

/**
 * Writes the rows below the header of a worksheet as CSV, each led by its row number (the
 * "line" of a spreadsheet's rejects), streaming both ways. Rows the sheet leaves out entirely
 * are written as blank rows so they are counted like the empty rows it has.
 */
export async function xlsxToCsv(path: string, sheetName: string, headerRow: number, width: number, out: string, limit: Transform): Promise<void> {
  const file = createWriteStream(out);
  const written = pipeline(limit, file);
  written.catch(() => {});
  const write = async (text: string) => {
    if (!limit.write(text)) await Promise.race([once(limit, 'drain'), written]);
  };
  await findSheet(path, sheetName, async (ws) => {
    let last = headerRow;
    for await (const row of ws) {
      if (row.number <= headerRow) continue;
      // Excel's sheets end at row 1,048,576; a workbook that says otherwise is not one Excel wrote,
      // and its gap would be written out as that many blank rows.
      if (row.number > EXCEL_MAX_ROWS || row.number <= last) {
        throw new SourceError(`the sheet "${sheetName}" has a row numbered ${row.number} after row ${last} (rows go up to ${EXCEL_MAX_ROWS}, in order)`, 'invalid_xlsx');
      }
      for (let gap = last + 1; gap < row.number; gap++) await write(`${gap}${','.repeat(width)}\n`);
      last = row.number;
      await write(`${row.number},${rowCells(row, width).map(csvField).join(',')}\n`);
    }
  }).catch(async (error: unknown) => {
    // The file is closed before the caller removes it.
    limit.destroy(error as Error);
    await written.catch(() => {});
    throw error;
  });
  limit.end();
  await written;
}

/** The last row of an Excel worksheet. */
const EXCEL_MAX_ROWS = 1_048_576;
