import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from 'pg';
import { applyLoadedMigrations, loadMigrations, migrationsHash } from './migrations.ts';
import type { Migration, MigrationSource } from './migrations.ts';
import { startTempPostgres } from './temp-server.ts';
import { assertIdentifier, pgErrorCode, quoteIdent, withClient, withDatabase } from './sql.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Admin URL of the shared test server, provided by `@fanout/testdb/src/global-setup.ts`. */
    fanoutPostgresUrl: string;
  }
}

/** Key under which the vitest globalSetup provides the admin URL (`inject('fanoutPostgresUrl')`). */
export const PROVIDE_KEY = 'fanoutPostgresUrl';
/** Environment variable the globalSetup sets for processes spawned by tests. */
export const URL_ENV = 'FANOUT_TEST_PG_URL';

export interface TestPostgres {
  /** Admin connection URL (may create and drop databases). */
  url: string;
}

export interface TestDatabase extends AsyncDisposable {
  /** Connection URL of the new database. */
  readonly url: string;
  /** Database name, `t_<random>` or `t_<name>_<random>`. */
  readonly name: string;
  /** Terminates the database's remaining connections and drops it. Idempotent. */
  drop(): Promise<void>;
}

export interface CreateTestDatabaseOptions {
  /** Migration sources applied in order (Prisma-style migrations folders or single `.sql` files). */
  migrations?: readonly MigrationSource[];
  /**
   * A readable label put into the name (`t_<name>_<random>`), lower-cased with other characters
   * than `[a-z0-9_]` replaced by `_`. The name is always unique; read it from `TestDatabase.name`.
   */
  name?: string;
  /** The server to create it on (its admin URL). Default: the shared test server ({@link getTestPostgres}). */
  server?: TestPostgres;
}

let shared: Promise<TestPostgres> | undefined;

async function injectedUrl(): Promise<string | undefined> {
  if (!process.env.VITEST) return undefined;
  try {
    const { inject } = await import('vitest');
    return inject(PROVIDE_KEY) || undefined;
  } catch {
    return undefined; // not inside a vitest worker
  }
}

async function startLocalServer(): Promise<TestPostgres> {
  // Stopped, and its directory removed, when this process exits.
  const server = await startTempPostgres();
  return { url: server.url };
}

/**
 * The process-wide Postgres server for tests, in this order: the URL provided by the vitest
 * globalSetup (`inject('fanoutPostgresUrl')`), `$FANOUT_TEST_PG_URL` (set by the globalSetup for
 * child processes), `$DATABASE_URL`; failing all of these, an embedded server started in a temp
 * dir for this process alone (slow if every test file does it: configure the globalSetup).
 */
export function getTestPostgres(): Promise<TestPostgres> {
  if (!shared) {
    shared = (async () => {
      const url = (await injectedUrl()) || process.env[URL_ENV] || process.env.DATABASE_URL;
      return url ? { url } : startLocalServer();
    })();
    shared.catch(() => {
      shared = undefined; // let a later call retry
    });
  }
  return shared;
}

/** Serialises template builds across processes; advisory locks are per database, so all callers use the admin database. */
const TEMPLATE_LOCK_KEY = '7310046238540034002';
/** Change when the way templates are built changes, so stale templates aren't reused. */
const TEMPLATE_VERSION = '1';

const templates = new Map<string, Promise<string>>();

async function databaseExists(admin: Client, name: string): Promise<boolean> {
  const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
  return (rowCount ?? 0) > 0;
}

/** Drops a (possibly half-built) template database; a template must be unmarked before DROP. */
async function dropBuild(admin: Client, name: string): Promise<void> {
  if (!(await databaseExists(admin, name))) return;
  await admin.query(`ALTER DATABASE ${quoteIdent(name)} WITH IS_TEMPLATE false`);
  await admin.query(`DROP DATABASE ${quoteIdent(name)} WITH (FORCE)`);
}

/**
 * Builds `tpl_<hash>` once per server: under an advisory lock, into `<tpl>_build` (a leftover from a
 * crashed build is dropped first), then marked as a template without connections and renamed, so the
 * final name only ever exists complete.
 */
async function buildTemplate(adminUrl: string, migrations: readonly Migration[]): Promise<string> {
  const name = `tpl_${migrationsHash(migrations).slice(0, 24)}_v${TEMPLATE_VERSION}`;
  const building = `${name}_build`;
  await withClient(adminUrl, async (admin) => {
    if (await databaseExists(admin, name)) return;
    await admin.query('SELECT pg_advisory_lock($1::bigint)', [TEMPLATE_LOCK_KEY]);
    try {
      if (await databaseExists(admin, name)) return;
      await dropBuild(admin, building);
      await admin.query(`CREATE DATABASE ${quoteIdent(building)}`);
      try {
        await withClient(withDatabase(adminUrl, building), (client) => applyLoadedMigrations(client, migrations));
        await admin.query(`ALTER DATABASE ${quoteIdent(building)} WITH ALLOW_CONNECTIONS false IS_TEMPLATE true`);
        await admin.query(`ALTER DATABASE ${quoteIdent(building)} RENAME TO ${quoteIdent(name)}`);
      } catch (error) {
        await dropBuild(admin, building).catch(() => {});
        throw error;
      }
    } finally {
      await admin.query('SELECT pg_advisory_unlock($1::bigint)', [TEMPLATE_LOCK_KEY]).catch(() => {});
    }
  });
  return name;
}

function getTemplate(adminUrl: string, migrations: readonly Migration[]): Promise<string> {
  const key = `${adminUrl}\0${migrationsHash(migrations)}`;
  let template = templates.get(key);
  if (!template) {
    template = buildTemplate(adminUrl, migrations);
    templates.set(key, template);
    template.catch(() => templates.delete(key));
  }
  return template;
}

function makeName(label: string | undefined): string {
  const random = randomBytes(6).toString('hex');
  if (label === undefined || label === '') return assertIdentifier(`t_${random}`);
  const clean = label.toLowerCase().replace(/[^a-z0-9_]+/g, '_').slice(0, 40);
  return assertIdentifier(`t_${clean}_${random}`);
}

/** Terminates all connections to `name` on the server at `adminUrl` and drops it (if it exists). */
export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  await withClient(adminUrl, async (admin) => {
    const others = 'FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()';
    // A pool that was just ended has sent its connections' Terminate without waiting for them to
    // close: they leave within milliseconds. Terminated before that, a client still closing reports
    // the termination as an 'error' event that nobody listens for any more (an uncaught exception).
    for (let i = 0; i < 25; i++) {
      const { rows } = await admin.query<{ n: number }>(`SELECT count(*)::int AS n ${others}`, [name]);
      if (rows[0]?.n === 0) break;
      await sleep(10);
    }
    const { rowCount } = await admin.query(`SELECT pg_terminate_backend(pid) ${others}`, [name]);
    // DROP waits for terminated backends to exit itself, but by sleeping 100 ms per check; poll faster.
    for (let i = 0; (rowCount ?? 0) > 0 && i < 200; i++) {
      const { rows } = await admin.query<{ n: number }>(`SELECT count(*)::int AS n ${others}`, [name]);
      if (rows[0]?.n === 0) break;
      await sleep(10);
    }
    await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
  });
}

/**
 * Creates a fresh, uniquely named database on the test server ({@link getTestPostgres}) with the
 * given migrations applied. Databases with the same migrations are cloned from a template database
 * `tpl_<hash of names and contents>` that the first caller builds (once per server, across
 * processes). Migrations are recorded in `public._fanout_migrations`, so {@link applyMigrations}
 * on the new database is a no-op.
 *
 * Close your pools before `drop()` (with `await using`, declare the pool after the database):
 * drop terminates remaining connections, and a pg.Pool without an 'error' listener crashes the
 * process when an idle client is terminated.
 */
export async function createTestDatabase(options: CreateTestDatabaseOptions = {}): Promise<TestDatabase> {
  const { url: adminUrl } = options.server ?? (await getTestPostgres());
  const migrations = await loadMigrations(options.migrations ?? []);
  const name = makeName(options.name);

  if (migrations.length === 0) {
    await withClient(adminUrl, (admin) => admin.query(`CREATE DATABASE ${quoteIdent(name)}`));
  } else {
    for (let attempt = 1; ; attempt++) {
      const template = await getTemplate(adminUrl, migrations);
      try {
        await withClient(adminUrl, (admin) =>
          admin.query(`CREATE DATABASE ${quoteIdent(name)} TEMPLATE ${quoteIdent(template)}`),
        );
        break;
      } catch (error) {
        // 3D000: the template was dropped since this process cached it; build it again.
        if (pgErrorCode(error) !== '3D000' || attempt > 1) throw error;
        templates.clear();
      }
    }
  }

  let dropping: Promise<void> | undefined;
  const drop = (): Promise<void> => (dropping ??= dropDatabase(adminUrl, name));
  return { url: withDatabase(adminUrl, name), name, drop, [Symbol.asyncDispose]: drop };
}
