import type pg from 'pg';
import { compileSpec, parseSpec, type CompiledSpec } from '../spec/compile.ts';
import type { SourceInfo } from '../source/inspect.ts';

/** Where the manager left a load's source and how to read it. */
export interface PreparedSource extends SourceInfo {
  /** The storage key of the bytes children read (the upload, or the prepared UTF-8 CSV). */
  key: string;
  /** Each record starts with its line number (a spreadsheet's row), added when it was prepared. */
  lineField: boolean;
}

/** What a child needs of its load, read once per process and load. */
export interface LoadContext {
  id: string;
  tenant: string;
  compiled: CompiledSpec;
  source: PreparedSource;
}

const cache = new Map<string, Promise<LoadContext>>();

export async function loadContext(pool: pg.Pool, loadId: string): Promise<LoadContext> {
  let entry = cache.get(loadId);
  if (!entry) {
    entry = (async () => {
      const { rows } = await pool.query<{ tenant: string; text: string; source: PreparedSource | null }>(
        'SELECT l.tenant, s.text, l.source FROM etl_load l JOIN etl_spec s ON s.id = l.spec_id WHERE l.id = $1',
        [loadId],
      );
      const row = rows[0];
      if (!row?.source) throw new Error(`load ${loadId} is not planned`);
      return { id: loadId, tenant: row.tenant, compiled: compileSpec(parseSpec(row.text)), source: row.source };
    })();
    cache.set(loadId, entry);
    // A few loads at a time per process is the normal case; forget the oldest.
    if (cache.size > 16) cache.delete(cache.keys().next().value!);
    entry.catch(() => cache.delete(loadId));
  }
  return entry;
}
