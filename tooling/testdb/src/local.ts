import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { startPostgres } from './postgres.ts';
import { withDatabase } from './sql.ts';

export interface LocalDatabase {
  url: string;
  /** Whether this is an embedded server started here (false: `DATABASE_URL`). */
  embedded: boolean;
  /**
   * Where the embedded server's cluster lives (undefined with `DATABASE_URL`): `<dataDir>/pg`, or
   * as root when the `postgres` OS user cannot reach that, a directory under `/var/tmp/fanout-data/`
   * (`<dataDir>/pg` links to it). Print this one.
   */
  clusterDir: string | undefined;
  /** Stops the embedded server (fast shutdown); nothing with `DATABASE_URL`. */
  stop(): Promise<void>;
}

/**
 * The database for a local run (`pnpm start`): `databaseUrl` (default `DATABASE_URL`) when set, otherwise an embedded
 * PostgreSQL whose data lives in `dataDir` and persists between starts, with a database `name`.
 * A server left running on that cluster by an earlier run is reused. Fails with a
 * `PostgresStartError` (one-line message) when the embedded server cannot start.
 */
export async function localDatabase(name: string, dataDir: string, databaseUrl = process.env.DATABASE_URL): Promise<LocalDatabase> {
  if (databaseUrl) return { url: databaseUrl, embedded: false, clusterDir: undefined, stop: async () => {} };
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`database name: "${name}" must match [a-z_][a-z0-9_]*`);
  mkdirSync(dataDir, { recursive: true });
  const server = await startPostgres({ dataDir: join(dataDir, 'pg'), ifRunning: 'reuse' });
  try {
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    try {
      const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      if (exists.rowCount === 0) await admin.query(`CREATE DATABASE ${name}`); // checked above: a plain identifier
    } finally {
      await admin.end();
    }
  } catch (error) {
    await server.stop();
    throw error;
  }
  return { url: withDatabase(server.url, name), embedded: true, clusterDir: server.dataDir, stop: () => server.stop() };
}
