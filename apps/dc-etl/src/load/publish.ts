import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { compileSpec, parseSpec } from '../spec/compile.ts';
import { createPublishedSql, publishedTable, quoted, stageTable } from './tables.ts';

/** Why a publish or a discard cannot happen now (answered 409). */
export class LoadStateError extends Error {}

async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch((rollback: Error) => (broken = rollback));
    throw error;
  } finally {
    client.release(broken);
  }
}

/**
 * Publishes a checked load in one transaction: the tenant's target table gets the load's clean,
 * deduplicated rows (replacing what it held, or added to it), the manifest its count, and the
 * staging table is dropped. Readers see the table before or after, never between. Publishing a
 * published load again changes nothing.
 */
export async function publishLoad(pool: pg.Pool, loadId: string, options: { onlyIfReady?: boolean } = {}): Promise<{ status: string; published: number }> {
  return inTransaction(pool, (client) => publishInTransaction(client, loadId, options));
}

/** The publish, inside a transaction the caller holds (the fan-in checks and publishes in one). */
export async function publishInTransaction(client: pg.PoolClient, loadId: string, options: { onlyIfReady?: boolean } = {}): Promise<{ status: string; published: number }> {
  const began = performance.now();
  {
    const { rows } = await client.query<{ status: string; tenant: string; text: string; manifest: { published?: number } | null }>(
      `SELECT l.status, l.tenant, s.text, l.manifest FROM etl_load l JOIN etl_spec s ON s.id = l.spec_id WHERE l.id = $1 FOR UPDATE OF l`,
      [loadId],
    );
    const load = rows[0];
    if (!load) throw new LoadStateError('no such load');
    if (load.status === 'published') return { status: 'published', published: load.manifest?.published ?? 0 };
    if (load.status !== 'ready') {
      if (options.onlyIfReady) return { status: load.status, published: 0 };
      throw new LoadStateError(`the load is ${load.status}; only a checked load (ready) can be published`);
    }
    const compiled = compileSpec(parseSpec(load.text));
    const { target, publish } = compiled.spec;
    const columns = compiled.targetColumns;
    // The registry row is the lock that orders publishes to one target.
    await client.query(`INSERT INTO etl_target (tenant, name, table_name, columns) VALUES ($1, $2, $3, $4) ON CONFLICT (tenant, name) DO NOTHING`, [
      load.tenant,
      target,
      `t_${randomUUID().replaceAll('-', '')}`,
      JSON.stringify(columns),
    ]);
    const registry = (await client.query<{ table_name: string; columns: unknown }>('SELECT table_name, columns FROM etl_target WHERE tenant = $1 AND name = $2 FOR UPDATE', [load.tenant, target])).rows[0]!;
    const table = publishedTable(registry.table_name);
    const exists = (await client.query('SELECT to_regclass($1) AS t', [`etl_pub.${quoted(registry.table_name)}`])).rows[0].t !== null;
    const sameColumns = JSON.stringify(registry.columns) === JSON.stringify(columns);
    if (exists && !sameColumns) {
      if (publish.mode === 'append') throw new LoadStateError(`the table "${target}" has other columns than this spec's; append needs the same columns (publish with mode replace to change them)`);
      await client.query(`DROP TABLE ${table}`);
    }
    if (!exists || !sameColumns) {
      await client.query(createPublishedSql(registry.table_name, columns));
      await client.query('UPDATE etl_target SET columns = $3 WHERE tenant = $1 AND name = $2', [load.tenant, target, JSON.stringify(columns)]);
    } else if (publish.mode === 'replace') {
      await client.query(`TRUNCATE ${table}`);
    }
    const names = columns.map((c) => quoted(c.name)).join(', ');
    const inserted = await client.query(`INSERT INTO ${table} (_load_id, _line, ${names}) SELECT $1, _line, ${names} FROM ${stageTable(loadId)} WHERE NOT _dup`, [loadId]);
    const published = inserted.rowCount ?? 0;
    await client.query('UPDATE etl_target SET load_id = $3, published_at = now() WHERE tenant = $1 AND name = $2', [load.tenant, target, loadId]);
    await client.query(`DROP TABLE ${stageTable(loadId)}`);
    await client.query(
      `UPDATE etl_load SET status = 'published', published_at = now(),
              manifest = manifest || jsonb_build_object('published', $2::bigint, 'publishedAt', to_jsonb(now()),
                                                        'timings', coalesce(manifest->'timings', '{}') || jsonb_build_object('publishMs', $3::int))
        WHERE id = $1`,
      [loadId, published, Math.round(performance.now() - began)],
    );
    return { status: 'published', published };
  }
}

/**
 * Discards a finished load: its published rows (when it was published), staging, rejects,
 * duplicates, profile and files are removed in one transaction (files after it); the load stays
 * listed as discarded, with its manifest.
 */
export async function discardLoad(pool: pg.Pool, loadId: string): Promise<{ files: string[] }> {
  return inTransaction(pool, async (client) => {
    const { rows } = await client.query<{ status: string; tenant: string; upload_id: string; source: { key: string } | null }>(
      'SELECT status, tenant, upload_id, source FROM etl_load WHERE id = $1 FOR UPDATE',
      [loadId],
    );
    const load = rows[0];
    if (!load) throw new LoadStateError('no such load');
    if (load.status === 'discarded') return { files: [] };
    if (load.status === 'loading') throw new LoadStateError('the load is still running; cancel its task first');
    if (load.status === 'published') {
      const targets = await client.query<{ name: string; table_name: string }>('SELECT name, table_name FROM etl_target WHERE tenant = $1 FOR UPDATE', [load.tenant]);
      for (const t of targets.rows) {
        const exists = (await client.query('SELECT to_regclass($1) AS t', [`etl_pub.${quoted(t.table_name)}`])).rows[0].t !== null;
        if (exists) await client.query(`DELETE FROM ${publishedTable(t.table_name)} WHERE _load_id = $1`, [loadId]);
      }
      await client.query('UPDATE etl_target SET load_id = NULL WHERE tenant = $1 AND load_id = $2', [load.tenant, loadId]);
    }
    await client.query(`DROP TABLE IF EXISTS ${stageTable(loadId)}`);
    await client.query('DELETE FROM etl_reject WHERE load_id = $1', [loadId]);
    await client.query('DELETE FROM etl_chunk WHERE load_id = $1', [loadId]);
    await client.query('DELETE FROM etl_duplicate WHERE load_id = $1', [loadId]);
    await client.query('DELETE FROM etl_profile WHERE load_id = $1', [loadId]);
    await client.query(`UPDATE etl_load SET status = 'discarded', discarded_at = now() WHERE id = $1`, [loadId]);
    // The upload goes too unless another load still reads it.
    const others = await client.query(`SELECT 1 FROM etl_load WHERE upload_id = $1 AND id <> $2 AND status <> 'discarded' LIMIT 1`, [load.upload_id, loadId]);
    return { files: [`loads/${loadId}`, ...(others.rowCount ? [] : [`uploads/${load.upload_id}`])] };
  });
}
