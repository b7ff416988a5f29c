/** A column of a parsed dataset. */
export interface Column {
  name: string;
  label: string;
  /** `num` values are numbers (or null when missing); `char` values are strings ('' when blank). */
  type: 'char' | 'num';
  length: number | null;
}

/** A value as stored: SDTM character values as strings, numeric values as numbers or null. */
export type Value = string | number | null;
export type Row = Record<string, Value>;

/** A file parsed into a table: its columns, then its rows one at a time (never all in memory). */
export interface ParsedTable {
  /** The dataset's own name when the file carries one (an XPT member), upper case. */
  name: string | null;
  label: string | null;
  columns: Column[];
  rows(): AsyncIterable<Row>;
}

/** A file the app cannot read: answered 400 with this reason, and nothing of it is stored. */
export class UnreadableFileError extends Error {
  override name = 'UnreadableFileError';
  readonly field: string;
  readonly rule: string;
  constructor(message: string, options: { field?: string; rule?: string } = {}) {
    super(message);
    this.field = options.field ?? 'body.file';
    this.rule = options.rule ?? 'unreadable_file';
  }
}
