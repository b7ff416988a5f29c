import { SOURCE_PLACEHOLDER, type FieldSpec } from '../../config.ts';

/** What the panel holds per field: chosen values (multiselect), a value or '' (select, text, number), an upload id or null (file). */
export type FieldValue = string[] | string | null;

export interface OptionValues {
  maxFailures: string;
  maxFailureRatio: string;
  deadlineMinutes: string;
}

export const EMPTY_OPTIONS: OptionValues = { maxFailures: '', maxFailureRatio: '', deadlineMinutes: '' };

export function initialValues(fields: readonly FieldSpec[]): Record<string, FieldValue> {
  const values: Record<string, FieldValue> = {};
  for (const f of fields) values[f.name] = f.kind === 'multiselect' ? [] : f.kind === 'file' ? null : '';
  return values;
}

/** The least a multiselect needs: its `min`, or one (a task of nothing is no task). */
export const minChosen = (f: Extract<FieldSpec, { kind: 'multiselect' }>): number => f.min ?? 1;

const entries = (n: number) => (n === 1 ? '1 entry' : `${n} entries`);

/** Checks the panel's values before sending; messages by field name (`options.x` for options). */
export function validateValues(fields: readonly FieldSpec[], values: Record<string, FieldValue>, options: OptionValues | null): Record<string, string[]> {
  const errors: Record<string, string[]> = {};
  const add = (name: string, message: string) => (errors[name] ??= []).push(message);
  for (const f of fields) {
    const v = values[f.name];
    switch (f.kind) {
      case 'multiselect': {
        const n = Array.isArray(v) ? v.length : 0;
        if (n < minChosen(f)) add(f.name, `Choose at least ${entries(minChosen(f))}.`);
        if (f.max !== undefined && n > f.max) add(f.name, `Choose at most ${entries(f.max)}.`);
        break;
      }
      case 'select':
      case 'text':
        if (f.required && (typeof v !== 'string' || v.trim() === '')) add(f.name, f.kind === 'select' ? 'Choose one.' : 'This field is required.');
        break;
      case 'file':
        if (f.required && !v) add(f.name, 'Choose a file.');
        break;
      case 'number': {
        const raw = typeof v === 'string' ? v.trim() : '';
        if (raw === '') {
          if (f.required) add(f.name, 'Enter a number.');
          break;
        }
        const n = Number(raw);
        if (!Number.isFinite(n)) add(f.name, 'Enter a number.');
        else {
          if (f.min !== undefined && n < f.min) add(f.name, `Enter ${f.min} or more.`);
          if (f.max !== undefined && n > f.max) add(f.name, `Enter ${f.max} or less.`);
        }
        break;
      }
    }
  }
  if (options) {
    const int = options.maxFailures.trim();
    if (int !== '' && !(Number.isInteger(Number(int)) && Number(int) >= 0)) add('options.maxFailures', 'Enter a whole number, 0 or more.');
    const ratio = options.maxFailureRatio.trim();
    if (ratio !== '' && !(Number(ratio) >= 0 && Number(ratio) <= 100)) add('options.maxFailureRatio', 'Enter a percentage from 0 to 100.');
    const minutes = options.deadlineMinutes.trim();
    if (minutes !== '' && !(Number(minutes) > 0)) add('options.deadlineMs', 'Enter a number of minutes above 0.');
  }
  return errors;
}

/** The body of `POST /tasks`: `input` by field name, and the options that were filled in. */
export function buildBody(fields: readonly FieldSpec[], values: Record<string, FieldValue>, options: OptionValues | null): { input: Record<string, unknown>; options?: Record<string, number> } {
  const input: Record<string, unknown> = {};
  for (const f of fields) {
    const v = values[f.name];
    if (f.kind === 'multiselect') input[f.name] = Array.isArray(v) ? v : [];
    else if (f.kind === 'number') {
      if (typeof v === 'string' && v.trim() !== '') input[f.name] = Number(v);
    } else if (typeof v === 'string' && v !== '') input[f.name] = v;
  }
  if (!options) return { input };
  const o: Record<string, number> = {};
  if (options.maxFailures.trim() !== '') o.maxFailures = Number(options.maxFailures);
  // The panel asks for a percentage; the API takes a ratio.
  if (options.maxFailureRatio.trim() !== '') o.maxFailureRatio = Number(options.maxFailureRatio) / 100;
  if (options.deadlineMinutes.trim() !== '') o.deadlineMs = Math.round(Number(options.deadlineMinutes) * 60_000);
  return Object.keys(o).length > 0 ? { input, options: o } : { input };
}

/** The entries of a source answer: `answer[list]` mapped to value, label and detail; entries without a value are skipped. */
export function sourceEntries(answer: unknown, source: { list: string; value: string; label: string; detail?: string }): { value: string; label: string; detail: string | null }[] {
  const list = (answer as Record<string, unknown> | null)?.[source.list];
  if (!Array.isArray(list)) throw new Error(`The answer has no list "${source.list}".`);
  const out: { value: string; label: string; detail: string | null }[] = [];
  for (const entry of list) {
    if (entry === null || typeof entry !== 'object') continue;
    const e = entry as Record<string, unknown>;
    const value = e[source.value];
    if (value === undefined || value === null) continue;
    const label = e[source.label];
    const detail = source.detail ? e[source.detail] : undefined;
    out.push({ value: String(value), label: label === undefined || label === null ? String(value) : String(label), detail: detail === undefined || detail === null ? null : String(detail) });
  }
  return out;
}

/** The next page's cursor a paged source's answer gives, or null on its last page. */
export function nextCursorOf(answer: unknown, source: { list: string; next?: string }): string | null {
  if (!source.next) return null;
  const next = (answer as Record<string, unknown> | null)?.[source.next];
  return typeof next === 'string' && next !== '' ? next : null;
}

/** The source's path asking for the page after `cursor`. */
export function pagePath(path: string, cursor: string | null): string {
  return cursor === null ? path : `${path}${path.includes('?') ? '&' : '?'}cursor=${encodeURIComponent(cursor)}`;
}


/**
 * A source's path with the values of the fields it names (each encoded as one path segment or
 * query value), or null while one of them has no value yet.
 */
export function sourcePath(path: string, values: Record<string, FieldValue>): string | null {
  let missing = false;
  const filled = path.replace(SOURCE_PLACEHOLDER, (_, name: string) => {
    const value = values[name];
    if (typeof value !== 'string' || value === '') missing = true;
    return encodeURIComponent(typeof value === 'string' ? value : '');
  });
  return missing ? null : filled;
}
