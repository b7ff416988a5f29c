// PostgreSQL's COPY text format: tab-separated, \N for NULL, backslash escapes.
const SPECIAL = /[\\\t\n\r]/;
const SPECIAL_ALL = /[\\\t\n\r]/g;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

export function copyField(value: unknown): string {
  if (value === null || value === undefined) return '\\N';
  if (typeof value === 'string') return SPECIAL.test(value) ? value.replace(SPECIAL_ALL, (ch) => ESCAPES[ch]!) : value;
  if (typeof value === 'boolean') return value ? 't' : 'f';
  return String(value);
}
