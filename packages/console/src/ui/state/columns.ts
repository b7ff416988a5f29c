import type { ColumnSpec } from '../../config.ts';
import { formatCount, formatDateTime, formatDuration } from './format.ts';

const ISO_MOMENT = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)$/;

/** The value at a dotted path (`snapshot.filename`, `result.fields.0`), or undefined. */
export function valueAt(root: unknown, path: string): unknown {
  let value: unknown = root;
  for (const key of path.split('.')) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** A cell of an app column as text (the UI escapes it): numbers grouped, ms as durations, JSON compact. */
export function formatColumn(root: unknown, column: ColumnSpec): string {
  const value = valueAt(root, column.path);
  if (value === undefined || value === null || value === '') return '—';
  switch (column.format ?? 'text') {
    case 'number':
      return typeof value === 'number' ? formatCount(value) : String(value);
    case 'ms':
      return typeof value === 'number' ? formatDuration(value) : String(value);
    case 'json':
      return JSON.stringify(value);
    case 'datetime':
      // Only a full ISO date and time with its zone: a date alone, or a time without a zone, is not a moment.
      return typeof value === 'string' && ISO_MOMENT.test(value) && !Number.isNaN(Date.parse(value)) ? formatDateTime(value) : String(value);
    default:
      return typeof value === 'object' ? JSON.stringify(value) : String(value);
  }
}
