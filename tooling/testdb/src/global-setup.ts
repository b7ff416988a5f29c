/**
 * vitest globalSetup: one Postgres server per test run, shared by all workers.
 *
 *   // vitest.config.ts
 *   test: { globalSetup: ['./tooling/testdb/src/global-setup.ts'] }
 *
 * Uses `$DATABASE_URL` when set; otherwise starts an embedded server (durable: false) in a temp
 * dir (on /dev/shm when possible, see temp-server.ts), removed at teardown. The admin URL is
 * provided to tests as `inject('fanoutPostgresUrl')` (read by `getTestPostgres()`) and exported
 * as `$FANOUT_TEST_PG_URL` for processes they spawn.
 */
import type { TestProject } from 'vitest/node';
import type { PostgresServer } from './postgres.ts';
import { startTempPostgres } from './temp-server.ts';
import { PROVIDE_KEY, URL_ENV } from './test-database.ts';

let server: PostgresServer | undefined;

export async function setup(project: Pick<TestProject, 'provide'>): Promise<() => Promise<void>> {
  let url = process.env.DATABASE_URL;
  if (!url) {
    server = await startTempPostgres();
    url = server.url;
  }
  project.provide(PROVIDE_KEY, url);
  process.env[URL_ENV] = url;
  return teardown;
}

export async function teardown(): Promise<void> {
  const current = server;
  server = undefined;
  delete process.env[URL_ENV];
  await current?.stop();
}

export default setup;
