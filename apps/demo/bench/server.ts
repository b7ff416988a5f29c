import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyMigrations, startPostgres, withDatabase } from '@fanout/testdb';
import pg from 'pg';

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
    const server = await startPostgres({ dataDir: join(dir, 'pg') });
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
