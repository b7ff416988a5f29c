import { PermanentError } from '../errors/errors.ts';

// A NUL escape, not an escaped backslash followed by "u0000".
const NUL_ESCAPE = /(?<!\\)(?:\\\\)*\\u0000/;
// A surrogate escape: JSON.stringify writes a pair as it is, and escapes only half of one.
const LONE_SURROGATE_ESCAPE = /(?<!\\)(?:\\\\)*\\ud[89a-f][0-9a-f]{2}/;

/**
 * What in a text `JSON.stringify` wrote PostgreSQL's JSON refuses: an escaped NUL character, or
 * an escaped half of a surrogate pair; null when neither is there.
 */
export function unstorableJsonEscape(json: string): 'nul_character' | 'lone_surrogate' | null {
  return NUL_ESCAPE.test(json) ? 'nul_character' : LONE_SURROGATE_ESCAPE.test(json) ? 'lone_surrogate' : null;
}

/**
 * Why a value cannot be stored as JSON (PostgreSQL's jsonb refuses a NUL character and half a
 * character; a BigInt or a cycle has no JSON), or null when it can.
 */
export function storableProblem(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  let json: string;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    return `cannot be stored as JSON (${error instanceof Error ? error.message : String(error)})`;
  }
  const escape = json === undefined ? null : unstorableJsonEscape(json);
  if (escape === 'nul_character') return 'contains a NUL character (\\u0000), which PostgreSQL cannot store';
  if (escape === 'lone_surrogate') return 'contains half of a surrogate pair (a lone \\ud800-\\udfff), which PostgreSQL cannot store';
  return null;
}

/** Throws a PermanentError (`code`) naming `what` when the value cannot be stored. */
export function assertStorable(value: unknown, what: string, code: string): void {
  const problem = storableProblem(value);
  if (problem) throw new PermanentError(`${what}: ${problem}`, { code });
}

/**
 * Text as PostgreSQL stores it: NUL characters (which no text column stores) and lone surrogates
 * (half a character, which jsonb refuses: a message cut inside an emoji) become U+FFFD.
 */
export const storableText = (text: string): string => (text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text).toWellFormed();
