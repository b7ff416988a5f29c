/**
 * vitest globalSetup: one Postgres server per test run, shared by all workers.
 *
 *   // vitest.config.ts
 *   test: { globalSetup: ['./tooling/testdb/src/global-setup.ts'] }
 *
 * Uses `$DATABASE_URL` when set; otherwise starts an embedded server (durable: false) in a temp
 * dir, removed at teardown. The admin URL is provided to tests as `inject('fanoutPostgresUrl')`
 * (read by `getTestPostgres()`) and exported as `$FANOUT_TEST_PG_URL` for processes they spawn.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startPostgres } from './postgres.ts';
import type { PostgresServer } from './postgres.ts';
import { PROVIDE_KEY, URL_ENV } from './test-database.ts';

let server: PostgresServer | undefined;
let tempDir: string | undefined;

export async function setup(project: Pick<TestProject, 'provide'>): Promise<() => Promise<void>> {
  let url = process.env.DATABASE_URL;
  if (!url) {
    tempDir = await fs.mkdtemp(path.join(os.tmpdir(), 'fanout-testdb-'));
    server = await startPostgres({ dataDir: path.join(tempDir, 'data'), durable: false });
    url = server.url;
  }
  project.provide(PROVIDE_KEY, url);
  process.env[URL_ENV] = url;
  return teardown;
}

export async function teardown(): Promise<void> {
  const [s, dir] = [server, tempDir];
  server = undefined;
  tempDir = undefined;
  delete process.env[URL_ENV];
  await s?.stop();
  if (dir) await fs.rm(dir, { recursive: true, force: true });
}

export default setup;
