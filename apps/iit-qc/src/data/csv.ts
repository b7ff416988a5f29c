import { createReadStream } from 'node:fs';
import { parse } from 'csv-parse';
import { UnreadableFileError, type Column, type ParsedTable, type Row, type Value } from './table.ts';

const NUMBER = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;

/** A record of a CSV file: its fields, and the line of the file it starts on (the header's is 1). */
export interface CsvRecord {
  fields: string[];
  line: number;
}

const lineBreaks = (text: string) => text.match(/\r\n|\r|\n/g)?.length ?? 0;

/**
 * The records of a CSV file, header included, each with the line it starts on: counted from the
 * record's own text, so that a quoted line break, a CRLF file or a skipped empty line do not shift
 * the lines an error names. A malformed line names its number.
 */
export async function* csvRecordsAt(path: string): AsyncGenerator<CsvRecord> {
  const parser = createReadStream(path).pipe(parse({ bom: true, relax_column_count: false, skip_empty_lines: true, raw: true }));
  let consumed = 0;
  try {
    for await (const { record, raw } of parser as AsyncIterable<{ record: string[]; raw: string }>) {
      // Empty lines skipped before the record come with its text.
      const line = consumed + 1 + lineBreaks(/^[\r\n]*/.exec(raw)![0]);
      consumed += lineBreaks(raw);
      yield { fields: record, line };
    }
  } catch (error) {
    const e = error as { code?: string; lines?: number; message: string };
    throw new UnreadableFileError(`not a readable CSV file${e.lines ? ` (line ${e.lines})` : ''}: ${e.message.replace(/^Invalid Record Length: /, '')}`, { rule: 'invalid_csv' });
  }
}

/** Rows of a CSV file as arrays of strings, header included. */
export async function* csvRecords(path: string): AsyncGenerator<string[]> {
  for await (const record of csvRecordsAt(path)) yield record.fields;
}

/** The header of a CSV file (its first line), or an error saying the file is empty. */
export async function csvHeader(path: string): Promise<string[]> {
  for await (const record of csvRecords(path)) return record.map((h) => h.trim());
  throw new UnreadableFileError('the CSV file is empty: a header line is expected', { rule: 'empty_file' });
}

const SAS_NAME = /^[A-Z][A-Z0-9_]{0,7}$/;

export interface SdtmCsvOptions {
  /** Variable types from define.xml, when the study has one: `num` columns are read as numbers. */
  types?: ReadonlyMap<string, 'char' | 'num'>;
}

/**
 * Reads an SDTM dataset exported as CSV: a header of SAS variable names, one line per record.
 * Without define.xml types, a column is numeric when every non-blank value is a number, as the
 * XPT of the same data would have it for --SEQ, --DY, --STRESN and AGE. A wrong header (blank,
 * duplicate or impossible names, no USUBJID where records belong to subjects) refuses the file.
 */
export async function readSdtmCsv(path: string, options: SdtmCsvOptions & { requireSubject: boolean }): Promise<ParsedTable> {
  const header = await csvHeader(path);
  header.forEach((name, i) => {
    if (name === '') throw new UnreadableFileError(`wrong CSV header: column ${i + 1} has no name`, { rule: 'invalid_header' });
    if (!SAS_NAME.test(name)) throw new UnreadableFileError(`wrong CSV header: "${name}" (column ${i + 1}) is not an SDTM variable name (upper case, at most 8 characters)`, { rule: 'invalid_header' });
    if (header.indexOf(name) !== i) throw new UnreadableFileError(`wrong CSV header: "${name}" appears twice`, { rule: 'invalid_header' });
  });
  if (options.requireSubject && !header.includes('USUBJID')) {
    throw new UnreadableFileError('wrong CSV header: no USUBJID column (a subject dataset needs one)', { rule: 'invalid_header' });
  }
  // A first pass decides the types (the file is on disk; reading it twice keeps memory flat).
  const numeric = header.map((name) => options.types?.get(name) === 'num');
  if (!options.types || options.types.size === 0) {
    const seen = header.map(() => false);
    const candidate = header.map(() => true);
    let first = true;
    for await (const record of csvRecords(path)) {
      if (first) {
        first = false;
        continue;
      }
      record.forEach((value, i) => {
        const v = value.trim();
        if (v === '') return;
        seen[i] = true;
        if (!NUMBER.test(v)) candidate[i] = false;
      });
    }
    header.forEach((_, i) => (numeric[i] = seen[i]! && candidate[i]!));
  }
  const columns: Column[] = header.map((name, i) => ({ name, label: '', type: numeric[i] ? 'num' : 'char', length: null }));
  return {
    name: null,
    label: null,
    columns,
    async *rows() {
      let first = true;
      for await (const { fields: record, line } of csvRecordsAt(path)) {
        if (first) {
          first = false;
          continue;
        }
        const row: Row = {};
        for (let i = 0; i < header.length; i++) {
          const raw = record[i] ?? '';
          let value: Value = raw;
          if (numeric[i]) {
            const v = raw.trim();
            if (v === '') value = null;
            else if (NUMBER.test(v)) value = Number(v);
            else throw new UnreadableFileError(`line ${line}: ${header[i]} is numeric, "${raw}" is not a number`, { rule: 'invalid_value' });
          }
          row[header[i]!] = value;
        }
        yield row;
      }
    },
  };
}
