import type { RuleFunction } from '@fanout/rules';

// Functions a rule may call beyond CEL's own. Each is total: a value of an unexpected type gives
// false (or an error the engine counts for that rule), never a crash of the child.

const NUMBER = /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/;
// ISO 8601 as SDTM uses it: a date of year, year-month or full date, optionally a time; missing
// components may be dashes in the middle (2014---15).
const ISO_DATETIME = /^(\d{4}|-)(-(\d{2}|-)(-(\d{2}|-)(T(\d{2}|-)(:(\d{2}|-)(:(\d{2}(\.\d+)?))?)?)?)?)?$/;
const FULL_DATE = /^(\d{4})-(\d{2})-(\d{2})/;

export const isBlank = (v: unknown): boolean => v === null || v === undefined || (typeof v === 'string' && v.trim() === '') || (typeof v === 'number' && Number.isNaN(v));
export const isNumber = (v: unknown): boolean => (typeof v === 'number' && Number.isFinite(v)) || typeof v === 'bigint' || (typeof v === 'string' && NUMBER.test(v));
export const toNumber = (v: unknown): number => {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'string' && NUMBER.test(v)) return Number(v);
  throw new Error(`not a number: ${JSON.stringify(v)}`);
};

function validDate(y: number, m: number, d: number): boolean {
  const date = new Date(Date.UTC(y, m - 1, d));
  return date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d;
}

/** An ISO 8601 date or datetime, complete or partial, with real months and days. */
export function isIsoDate(v: unknown): boolean {
  // Unknown parts are dashes only between known ones (2014---02): a value ends with a known part.
  if (typeof v !== 'string' || !ISO_DATETIME.test(v) || !/\d$/.test(v)) return false;
  const full = FULL_DATE.exec(v);
  if (full) return validDate(Number(full[1]), Number(full[2]), Number(full[3]));
  const month = /^\d{4}-(\d{2})/.exec(v);
  return !month || (Number(month[1]) >= 1 && Number(month[1]) <= 12);
}

/** A date known to the year or the month only (2014, 2014-03), as SDTM allows. */
export const isPartialDate = (v: unknown): boolean => typeof v === 'string' && isIsoDate(v) && !/^\d{4}-\d{2}-\d{2}/.test(v);

/** The date parts both values know, for comparing partial dates only as far as both go. */
function dateParts(v: string): number[] {
  const parts: number[] = [];
  const m = /^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?/.exec(v);
  if (!m) return parts;
  for (const p of m.slice(1)) {
    if (p === undefined) break;
    parts.push(Number(p));
  }
  return parts;
}

/**
 * -1, 0 or 1 comparing two ISO dates as far as both are known; null when either is blank, not a
 * date, or they cannot be told apart at the precision they share (2014-03 against 2014-03-12).
 */
export function compareDates(a: unknown, b: unknown): number | null {
  if (typeof a !== 'string' || typeof b !== 'string' || !isIsoDate(a) || !isIsoDate(b)) return null;
  const pa = dateParts(a);
  const pb = dateParts(b);
  const n = Math.min(pa.length, pb.length);
  for (let i = 0; i < n; i++) if (pa[i] !== pb[i]) return pa[i]! < pb[i]! ? -1 : 1;
  if (pa.length === 3 && pb.length === 3) {
    // Same day: compare the times when both have them.
    const ta = a.slice(10);
    const tb = b.slice(10);
    if (ta.length > 1 && tb.length > 1 && /^T\d{2}:\d{2}/.test(ta) && /^T\d{2}:\d{2}/.test(tb)) return ta.slice(0, 6) === tb.slice(0, 6) ? 0 : ta < tb ? -1 : 1;
    return 0;
  }
  return null;
}

/** Days from a to b (complete dates only), or an error when either is not a complete date. */
export function daysBetween(a: unknown, b: unknown): number {
  const fa = typeof a === 'string' ? FULL_DATE.exec(a) : null;
  const fb = typeof b === 'string' ? FULL_DATE.exec(b) : null;
  if (!fa || !fb) throw new Error('daysBetween needs two complete dates');
  return (Date.UTC(Number(fb[1]), Number(fb[2]) - 1, Number(fb[3])) - Date.UTC(Number(fa[1]), Number(fa[2]) - 1, Number(fa[3]))) / 86_400_000;
}

export const hasFullDate = (v: unknown): boolean => typeof v === 'string' && FULL_DATE.test(v) && isIsoDate(v);

// REDCap's text validation types, as its data entry checks them.
const REDCAP_FORMATS: Record<string, (v: string) => boolean> = {
  integer: (v) => /^[-+]?\d+$/.test(v),
  number: (v) => NUMBER.test(v),
  number_1dp: (v) => /^[-+]?\d+\.\d$/.test(v),
  number_2dp: (v) => /^[-+]?\d+\.\d{2}$/.test(v),
  number_comma_decimal: (v) => /^[-+]?\d+(,\d+)?$/.test(v),
  date_ymd: (v) => /^\d{4}-\d{2}-\d{2}$/.test(v) && isIsoDate(v),
  date_mdy: (v) => /^\d{4}-\d{2}-\d{2}$/.test(v) && isIsoDate(v),
  date_dmy: (v) => /^\d{4}-\d{2}-\d{2}$/.test(v) && isIsoDate(v),
  datetime_ymd: (v) => /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$/.test(v) && isIsoDate(v.slice(0, 10)),
  datetime_mdy: (v) => /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$/.test(v) && isIsoDate(v.slice(0, 10)),
  datetime_dmy: (v) => /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$/.test(v) && isIsoDate(v.slice(0, 10)),
  datetime_seconds_ymd: (v) => /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/.test(v) && isIsoDate(v.slice(0, 10)),
  datetime_seconds_mdy: (v) => /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/.test(v) && isIsoDate(v.slice(0, 10)),
  datetime_seconds_dmy: (v) => /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/.test(v) && isIsoDate(v.slice(0, 10)),
  time: (v) => /^([01]\d|2[0-3]):[0-5]\d$/.test(v),
  time_mm_ss: (v) => /^[0-5]\d:[0-5]\d$/.test(v),
  email: (v) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(v),
  phone: (v) => /^\(?\d{3}\)?[-. ]?\d{3}[-. ]?\d{4}$/.test(v),
  zipcode: (v) => /^\d{5}(-\d{4})?$/.test(v),
  alpha_only: (v) => /^[A-Za-z]+$/.test(v),
};

/** Whether REDCap knows this validation type (others are not checked: rule C skips them). */
export const knownRedcapFormat = (validation: string): boolean => validation in REDCAP_FORMATS;
export const redcapFormatOk = (value: unknown, validation: string): boolean => {
  const check = REDCAP_FORMATS[validation];
  return !check || (typeof value === 'string' ? check(value.trim()) : isNumber(value) && check(String(value)));
};

/** Outside [min, max] for a numeric or date validation; blank limits are open. */
export function outOfRange(value: unknown, validation: string, min: unknown, max: unknown): boolean {
  const isDate = validation.startsWith('date') || validation.startsWith('datetime');
  const v = isDate ? String(value) : isNumber(value) ? toNumber(value) : null;
  if (v === null) return false;
  const below = !isBlank(min) && (isDate ? v < String(min) : isNumber(min) && (v as number) < toNumber(min));
  const above = !isBlank(max) && (isDate ? v > String(max) : isNumber(max) && (v as number) > toNumber(max));
  return Boolean(below || above);
}

const setCache = new WeakMap<object, Set<string>>();
/** Membership of a value in a codelist, comparing text (1 and "1" are the same code). */
export function inList(value: unknown, list: unknown): boolean {
  if (!Array.isArray(list)) throw new Error('inList needs a list');
  let set = setCache.get(list);
  if (!set) setCache.set(list, (set = new Set(list.map((x) => String(x)))));
  return set.has(typeof value === 'bigint' ? value.toString() : String(value));
}

/** SAS-like text of a value: numbers without a trailing .0, strings as they are. */
export const text = (v: unknown): string => (v === null || v === undefined ? '' : typeof v === 'number' || typeof v === 'bigint' ? String(v) : String(v));

/** Rounds half away from zero, as REDCap's round() does. */
export function roundTo(x: number, digits: number): number {
  const f = 10 ** digits;
  return (Math.sign(x) * Math.round(Math.abs(x) * f + 1e-9)) / f;
}

const approxEqual = (a: number, b: number): boolean => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));

/**
 * Whether a calc field's saved value differs from its calculation, as REDCap's rule H compares them:
 * a calculation that gives no finite number (a division by zero) is blank, as REDCap leaves it, so
 * then only a saved value differs; a finite result differs from a blank or non-numeric saved value
 * (REDCap's "Fix calcs now" would write it).
 */
export function calcDiffers(saved: unknown, calculated: unknown): boolean {
  const c = toNumber(calculated);
  if (!Number.isFinite(c)) return !isBlank(saved);
  return !isNumber(saved) || !approxEqual(toNumber(saved), c);
}

/** The functions every rule may call, with their CEL signatures. */
export const RULE_FUNCTIONS: RuleFunction[] = [
  { signature: 'isBlank(dyn): bool', implementation: isBlank },
  { signature: 'isNumber(dyn): bool', implementation: isNumber },
  { signature: 'num(dyn): double', implementation: toNumber },
  { signature: 'text(dyn): string', implementation: text },
  { signature: 'isIsoDate(dyn): bool', implementation: isIsoDate },
  { signature: 'isPartialDate(dyn): bool', implementation: isPartialDate },
  { signature: 'hasFullDate(dyn): bool', implementation: hasFullDate },
  { signature: 'dateBefore(dyn, dyn): bool', implementation: (a: unknown, b: unknown) => compareDates(a, b) === -1 },
  { signature: 'dateAfter(dyn, dyn): bool', implementation: (a: unknown, b: unknown) => compareDates(a, b) === 1 },
  { signature: 'daysBetween(dyn, dyn): double', implementation: daysBetween },
  { signature: 'inList(dyn, list): bool', implementation: inList },
  { signature: 'longerThan(dyn, dyn): bool', implementation: (v: unknown, n: unknown) => typeof v === 'string' && v.length > toNumber(n) },
  { signature: 'abs(dyn): double', implementation: (x: unknown) => Math.abs(toNumber(x)) },
  { signature: 'pow(dyn, dyn): double', implementation: (x: unknown, y: unknown) => Math.pow(toNumber(x), toNumber(y)) },
  { signature: 'sqrt(dyn): double', implementation: (x: unknown) => Math.sqrt(toNumber(x)) },
  { signature: 'round(dyn, dyn): double', implementation: (x: unknown, d: unknown) => roundTo(toNumber(x), toNumber(d)) },
  { signature: 'approxEqual(dyn, dyn): bool', implementation: (a: unknown, b: unknown) => approxEqual(toNumber(a), toNumber(b)) },
  { signature: 'calcDiffers(dyn, dyn): bool', implementation: calcDiffers },
  { signature: 'redcapFormatOk(dyn, string): bool', implementation: redcapFormatOk },
  { signature: 'outOfRange(dyn, string, dyn, dyn): bool', implementation: outOfRange },
  { signature: 'upper(dyn): string', implementation: (v: unknown) => text(v).toUpperCase() },
];
