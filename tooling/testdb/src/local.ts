import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { startPostgres } from './postgres.ts';
import { withDatabase } from './sql.ts';

/**
 * The database for a local run (`pnpm start`): `DATABASE_URL` when set, otherwise an embedded
 * PostgreSQL whose data lives in `dataDir` and persists between starts, with a database `name`.
 */
export async function localDatabase(name: string, dataDir: string): Promise<{ url: string; embedded: boolean; stop(): Promise<void> }> {
  if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL, embedded: false, stop: async () => {} };
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`database name: "${name}" must match [a-z_][a-z0-9_]*`);
  mkdirSync(dataDir, { recursive: true });
  const server = await startPostgres({ dataDir: join(dataDir, 'pg'), ifRunning: 'reuse' });
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE ${name}`); // checked above: a plain identifier
  } finally {
    await admin.end();
  }
  return { url: withDatabase(server.url, name), embedded: true, stop: () => server.stop() };
}
