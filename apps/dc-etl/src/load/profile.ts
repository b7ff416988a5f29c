import type pg from 'pg';
import type { CompiledSpec } from '../spec/compile.ts';
import { quoted, stageTable } from './tables.ts';

const TOP = 5;

/**
 * Profiles each target column over the rows a load publishes (clean, not duplicates): nulls,
 * distinct values, min and max (in the column's type, shown as text), the most frequent values.
 */
export async function computeProfile(client: pg.PoolClient, loadId: string, compiled: CompiledSpec): Promise<void> {
  const table = stageTable(loadId);
  const total = Number((await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${table} WHERE NOT _dup`)).rows[0]!.n);
  await client.query('DELETE FROM etl_profile WHERE load_id = $1', [loadId]);
  for (const [i, c] of compiled.targetColumns.entries()) {
    const col = quoted(c.name);
    // One hashed pass per column: its values with their counts give every figure. PostgreSQL has
    // no min/max for booleans; their text orders the same (false < true).
    const ordered = c.type === 'boolean' ? 'v::text' : 'v';
    const { rows } = await client.query(
      `WITH g AS MATERIALIZED (SELECT ${col} AS v, count(*) AS n FROM ${table} WHERE NOT _dup GROUP BY ${col})
       SELECT (SELECT count(*) FROM g WHERE v IS NOT NULL) AS distinct_count,
              (SELECT coalesce(sum(n), 0) FROM g WHERE v IS NULL) AS nulls,
              (SELECT min(${ordered})::text FROM g) AS min, (SELECT max(${ordered})::text FROM g) AS max,
              (SELECT coalesce(json_agg(json_build_object('value', v::text, 'count', n) ORDER BY n DESC, v), '[]')
                 FROM (SELECT v, n FROM g WHERE v IS NOT NULL ORDER BY n DESC, v LIMIT ${TOP}) t) AS top`,
    );
    const r = rows[0];
    await client.query(
      `INSERT INTO etl_profile (load_id, position, column_name, type, rows, nulls, distinct_count, min, max, top) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [loadId, i + 1, c.name, c.type, total, Number(r.nulls), Number(r.distinct_count), r.min, r.max, JSON.stringify(r.top.map((x: { value: string; count: number }) => ({ value: x.value, count: Number(x.count) })))],
    );
  }
}
