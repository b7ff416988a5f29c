import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startPostgres, withDatabase } from '@fanout/testdb';
import pg from 'pg';

/**
 * The database for local runs: `DATABASE_URL` when set, otherwise an embedded PostgreSQL whose
 * data lives in `<repo>/.data/<name>` and persists between starts.
 */
export async function localDatabase(name: string): Promise<{ url: string; embedded: boolean; stop(): Promise<void> }> {
  if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL, embedded: false, stop: async () => {} };
  const dataDir = fileURLToPath(new URL(`../../../.data/${name}`, import.meta.url));
  mkdirSync(dataDir, { recursive: true });
  const server = await startPostgres({ dataDir: `${dataDir}/pg`, ifRunning: 'reuse' });
  const database = name.replaceAll('-', '_');
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE ${database}`); // a fixed [a-z_] name
  } finally {
    await admin.end();
  }
  return { url: withDatabase(server.url, database), embedded: true, stop: () => server.stop() };
}
