import type pg from 'pg';
import type { CompiledSpec } from '../spec/compile.ts';
import { quoted, stageTable } from './tables.ts';

/** Memory for the dedupe's hashed aggregate (the default 4 MB spills a few million keys to disk). */
const DEDUPE_WORK_MEM = '64MB';

/**
 * Marks every row but the first of each dedupe key group (by the spec's order, then source line)
 * and records the groups. NULLs in a key compare equal, as in GROUP BY.
 *
 * Set-based and sized for millions of rows: one hashed aggregate finds the keys that occur more
 * than once, one hash join collects their rows (rows with a NULL in the key are taken as they
 * are: they can only match each other), and only those rows are ranked, recorded and marked.
 * Nothing sorts or rewrites the whole table. Runs in the fan-in's transaction, so the marks are
 * committed with the load's status or not at all (a rerun finds none).
 */
export async function markDuplicates(client: pg.PoolClient, loadId: string, compiled: CompiledSpec): Promise<{ duplicates: number; groups: number }> {
  const dedupe = compiled.spec.dedupe!;
  const table = stageTable(loadId);
  const keys = dedupe.key.map(quoted);
  const orderColumns = dedupe.order.map((o) => quoted(o.column)).filter((c) => !keys.includes(c));
  const order = [...dedupe.order.map((o) => `${quoted(o.column)} ${o.direction === 'desc' ? 'DESC' : 'ASC'} NULLS LAST`), '_line'].join(', ');
  const nullable = dedupe.key.filter((k) => !compiled.columns.find((c) => c.name === k)?.required);
  await client.query(`SET LOCAL work_mem = '${DEDUPE_WORK_MEM}'`);
  await client.query(
    `CREATE TEMP TABLE etl_dup_rows ON COMMIT DROP AS
     SELECT * FROM (
       SELECT rid, _line, ${[...keys, ...orderColumns].join(', ')}, count(*) OVER w AS size, row_number() OVER (w ORDER BY ${order}) AS rn
         FROM (SELECT s.ctid AS rid, s._line, ${[...keys, ...orderColumns].map((c) => `s.${c}`).join(', ')}
                 FROM ${table} s LEFT JOIN (SELECT ${keys.join(', ')} FROM ${table} GROUP BY ${keys.join(', ')} HAVING count(*) > 1) d
                   ON ${keys.map((k) => `s.${k} = d.${k}`).join(' AND ')}
                WHERE d.${keys[0]} IS NOT NULL${nullable.map((k) => ` OR s.${quoted(k)} IS NULL`).join('')}) s
       WINDOW w AS (PARTITION BY ${keys.join(', ')})) t
      WHERE size > 1`,
  );
  await client.query('RESET work_mem');
  const marked = await client.query(`UPDATE ${table} s SET _dup = true FROM etl_dup_rows r WHERE s.ctid = r.rid AND r.rn > 1`);
  await client.query('DELETE FROM etl_duplicate WHERE load_id = $1', [loadId]);
  const groups = await client.query(
    `INSERT INTO etl_duplicate (load_id, group_no, key, kept_line, dropped_lines)
     SELECT $1, row_number() OVER (ORDER BY min(_line)), jsonb_build_array(${keys.join(', ')}),
            min(_line) FILTER (WHERE rn = 1), array_agg(_line ORDER BY _line) FILTER (WHERE rn > 1)
       FROM etl_dup_rows GROUP BY ${keys.join(', ')}`,
    [loadId],
  );
  await client.query('DROP TABLE etl_dup_rows');
  return { duplicates: marked.rowCount ?? 0, groups: groups.rowCount ?? 0 };
}
