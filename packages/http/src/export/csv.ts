/**
 * CSV (RFC 4180, CRLF line ends) that is safe to open in a spreadsheet: a text cell that starts
 * with a formula character (`=`, `+`, `-`, `@`, tab, carriage return, line feed), or with spaces
 * before one of `=`, `+`, `-`, `@` (some spreadsheets trim them), is prefixed with `'` so it is
 * shown as text instead of run (OWASP's CSV injection advice). Numbers and booleans are written
 * as they are: `-5` stays a number.
 */
export function csvCell(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  const text = value === null || value === undefined ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value);
  const safe = FORMULA_START.test(text) ? `'${text}` : text;
  return /[",\n\r]/.test(safe) || safe !== text ? `"${safe.replaceAll('"', '""')}"` : safe;
}
const FORMULA_START = /^(?:[\t\r\n]|[ \u00a0]*[=+\-@])/;

export const csvLine = (cells: readonly unknown[]): string => `${cells.map(csvCell).join(',')}\r\n`;

export interface CsvColumn<Row> {
  header: string;
  value(row: Row): unknown;
}

/** CSV lines (header first) for rows that arrive one by one: 100,000 rows never sit in memory. */
export async function* csvLines<Row>(columns: readonly CsvColumn<Row>[], rows: AsyncIterable<Row> | Iterable<Row>): AsyncGenerator<string> {
  yield csvLine(columns.map((c) => c.header));
  for await (const row of rows) yield csvLine(columns.map((c) => c.value(row)));
}
