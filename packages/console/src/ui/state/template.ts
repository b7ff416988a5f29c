import { valueAt } from './columns.ts';

/**
 * A path template with `{field}` placeholders filled from values (dotted paths allowed:
 * `{subject.id}`), each URI-encoded; null when a placeholder has no value (the action is not
 * offered on that row).
 */
export function fillPath(template: string, values: Record<string, unknown>): string | null {
  let missing = false;
  const path = template.replace(/\{([A-Za-z0-9_.]+)\}/g, (_, name: string) => {
    const value = valueAt(values, name);
    if (value === undefined || value === null || value === '') {
      missing = true;
      return '';
    }
    return encodeURIComponent(String(value));
  });
  return missing ? null : path;
}

/** A path with query parameters added (empty values left out). */
export function withQuery(path: string, params: Record<string, string | null | undefined>): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== undefined && value !== null && value !== '') query.set(key, value);
  const text = query.toString();
  if (!text) return path;
  return `${path}${path.includes('?') ? '&' : '?'}${text}`;
}
