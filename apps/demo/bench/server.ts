import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyMigrations, startPostgres, withDatabase } from '@fanout/testdb';
import pg from 'pg';

const statementsWanted = process.env.BENCH_STATEMENTS === '1';

/**
 * The statements of one database as the server timed them (pg_stat_statements), the slowest first
 * by their longest run (`read(top, 'total')`: by the time all their runs took): null when the
 * server does not keep them (BENCH_STATEMENTS unset, or a DATABASE_URL server without the module).
 * `reset()` before the run, `read()` after it.
 */
export function statementTimes(dbUrl: string) {
  const query = async <T extends pg.QueryResultRow>(sql: string): Promise<T[] | null> => {
    if (!statementsWanted) return null;
    const client = new pg.Client({ connectionString: dbUrl });
    await client.connect();
    try {
      await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
      return (await client.query<T>(sql)).rows;
    } catch {
      return null; // not preloaded on this server
    } finally {
      await client.end();
    }
  };
  return {
    async reset(): Promise<void> {
      await query('SELECT pg_stat_statements_reset()');
    },
    async read(top = 20, by: 'max' | 'total' = 'max'): Promise<Array<{ query: string; calls: number; meanMs: number; maxMs: number; totalMs: number; planMs: number; blocksPerCall: number }> | null> {
      const rows = await query<{ query: string; calls: string; mean: number; max: number; total: number; plan: number; blocks: number }>(
        `SELECT regexp_replace(query, '\\s+', ' ', 'g') AS query, calls, mean_exec_time AS mean, max_exec_time AS max, total_exec_time AS total, total_plan_time AS plan,
                (shared_blks_hit + shared_blks_read)::float8 / GREATEST(calls, 1) AS blocks
         FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
         ORDER BY ${by === 'total' ? 'total_exec_time' : 'max_exec_time'} DESC LIMIT ${Number(top)}`,
      );
      const ms = (x: number) => Math.round(x * 100) / 100;
      return rows?.map((r) => ({ query: r.query.slice(0, 160), calls: Number(r.calls), meanMs: ms(r.mean), maxMs: ms(r.max), totalMs: ms(r.total), planMs: ms(r.plan), blocksPerCall: Math.round(r.blocks) })) ?? null;
    },
  };
}

/**
 * The benchmarks' PostgreSQL: DATABASE_URL's server when set, otherwise an embedded one (durable,
 * like production) in a temp folder. `database(name)` makes a fresh database with migrations.
 */
export async function benchServer() {
  let url = process.env.DATABASE_URL;
  let stop = async () => {};
  if (!url) {
    const dir = mkdtempSync(join(tmpdir(), 'fanout-bench-'));
    // As root the server runs as the postgres user, who must be able to enter our folder
    // (otherwise testdb places the cluster elsewhere, and removing this folder would leave it).
    chmodSync(dir, 0o711);
    // BENCH_STATEMENTS=1: the server keeps statement statistics (pg_stat_statements), and the
    // runs of Fanout alone print their slowest statements as the server timed them.
    const settings = statementsWanted ? { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'all', 'pg_stat_statements.track_planning': 'on' } : undefined;
    const server = await startPostgres({ dataDir: join(dir, 'pg'), ...(settings ? { settings } : {}) });
    url = server.url;
    stop = async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    };
  }
  const serverUrl = url;
  return {
    async database(name: string, migrations: string[]): Promise<string> {
      const admin = new pg.Client({ connectionString: serverUrl });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`); // names are fixed [a-z0-9_]
      await admin.query(`CREATE DATABASE ${name}`);
      await admin.end();
      const dbUrl = withDatabase(serverUrl, name);
      await applyMigrations(dbUrl, migrations);
      return dbUrl;
    },
    stop,
  };
}
