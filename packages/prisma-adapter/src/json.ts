/** A value as the text of a `jsonb` parameter; `undefined` (no value) is SQL NULL. */
export const json = (value: unknown): string | null => (value === undefined ? null : JSON.stringify(value));
