const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID.test(value);

// Task ids are made by core (a runtime may make one before the task is stored).
export { uuidv7 } from '@fanout/core';

export function encodeCursor(parts: readonly (string | number)[]): string {
  return Buffer.from(JSON.stringify(parts)).toString('base64url');
}

export function decodeCursor(cursor: string): unknown[] | null {
  try {
    const parts: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    return Array.isArray(parts) ? parts : null;
  } catch {
    return null;
  }
}

/**
 * `entries` sorted by item id, in the order PostgreSQL sorts uuids (the store's ids are lowercase
 * text). Statements that lock several item rows take them in this order, as the maintenance loop's
 * recovery does (`ORDER BY i.id`), so two of them never wait for each other in a cycle.
 */
export function inItemIdOrder<T extends { itemId: string }>(entries: readonly T[]): T[] {
  return [...entries].sort((a, b) => (a.itemId < b.itemId ? -1 : a.itemId > b.itemId ? 1 : 0));
}
