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
  const columns = compiled.targetColumns;
  const aggregates = columns.flatMap((c) => {
    const col = quoted(c.name);
    // PostgreSQL has no min/max for booleans; their text orders the same (false < true).
    const ordered = c.type === 'boolean' ? `${col}::text` : col;
    return [`count(${col})`, `count(DISTINCT ${col})`, `min(${ordered})::text`, `max(${ordered})::text`];
  });
  const { rows } = await client.query({ text: `SELECT count(*), ${aggregates.join(', ')} FROM ${table} WHERE NOT _dup`, rowMode: 'array' });
  const stats = rows[0] as (string | null)[];
  const total = Number(stats[0]);
  await client.query('DELETE FROM etl_profile WHERE load_id = $1', [loadId]);
  for (const [i, c] of columns.entries()) {
    const col = quoted(c.name);
    const top = await client.query<{ value: string; count: string }>(
      `SELECT ${col}::text AS value, count(*) AS count FROM ${table} WHERE NOT _dup AND ${col} IS NOT NULL GROUP BY ${col} ORDER BY count(*) DESC, ${col} LIMIT ${TOP}`,
    );
    const [nonNull, distinct, min, max] = stats.slice(1 + i * 4, 5 + i * 4);
    await client.query(
      `INSERT INTO etl_profile (load_id, position, column_name, type, rows, nulls, distinct_count, min, max, top) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [loadId, i + 1, c.name, c.type, total, total - Number(nonNull), Number(distinct), min, max, JSON.stringify(top.rows.map((r) => ({ value: r.value, count: Number(r.count) })))],
    );
  }
}
