import pg from 'pg';
import type { PgClientLike, PgPoolLike } from '../prisma-like.ts';
import { readFanoutMigrations } from './files.ts';
import { missingFrom, PROBE_SQL } from './list.ts';

/**
 * The ledger of applied migrations, shared with `@fanout/testdb` and `@fanout/kit` (same table,
 * same checksums, same lock), so a database migrated by either is up to date for the other.
 */
const LEDGER = 'public._fanout_migrations';
/** pg_advisory_lock key serialising migration runs against one database (the same as testdb's). */
const LOCK_KEY = '7310046238540034001';

export interface MigrationResult {
  /** Migrations run now, in order. */
  applied: string[];
  /** Migrations already there (recorded in the ledger, in Prisma's `_prisma_migrations`, or found in the catalog). */
  present: string[];
}

type Session = { query(text: string, values?: unknown[]): Promise<{ rows: any[] }>; close(): Promise<void> };

async function openSession(target: string | PgPoolLike): Promise<Session> {
  if (typeof target === 'string') {
    const client = new pg.Client({ connectionString: target, application_name: 'fanout-migrate' });
    await client.connect();
    return { query: (text, values) => client.query(text, values), close: () => client.end() };
  }
  const client: PgClientLike = await target.connect();
  return { query: (text, values) => client.query(text, values), close: async () => client.release() };
}

async function prismaApplied(session: Session): Promise<Set<string>> {
  const { rows } = await session.query(`SELECT to_regclass('_prisma_migrations') IS NOT NULL AS present`);
  if (!rows[0]?.present) return new Set();
  const applied = await session.query(
    'SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL',
  );
  return new Set(applied.rows.map((row: { migration_name: string }) => row.migration_name));
}

/**
 * Applies every Fanout migration the database lacks, in order, each in its own transaction with
 * its ledger row (`public._fanout_migrations`), under an advisory lock so that processes starting
 * together migrate once. A migration counts as present when the ledger records it, when Prisma's
 * `_prisma_migrations` does (`prisma migrate deploy` applied the copied folders), or when its
 * objects are in the catalog (applied by hand); the last is recorded in the ledger. A recorded
 * migration whose SQL has changed since is an error: released migrations are never edited.
 *
 * `target` is a connection string or a `pg` pool. Needs no Prisma CLI.
 */
export async function applyFanoutMigrations(target: string | PgPoolLike): Promise<MigrationResult> {
  const migrations = await readFanoutMigrations();
  const session = await openSession(target);
  try {
    await session.query('SELECT pg_advisory_lock($1::bigint)', [LOCK_KEY]);
    try {
      await session.query(
        `CREATE TABLE IF NOT EXISTS ${LEDGER} (name text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      const ledger = new Map<string, string>(
        (await session.query(`SELECT name, checksum FROM ${LEDGER}`)).rows.map((row: { name: string; checksum: string }) => [row.name, row.checksum]),
      );
      const byPrisma = await prismaApplied(session);
      const missing = new Set(missingFrom((await session.query(PROBE_SQL)).rows[0]));
      const result: MigrationResult = { applied: [], present: [] };
      for (const migration of migrations) {
        const recorded = ledger.get(migration.name);
        if (recorded !== undefined && recorded !== migration.checksum) {
          throw new Error(
            `Fanout migration ${migration.name} was applied with other SQL than this version of @fanout/prisma-adapter ships; released migrations are never edited, so the database or the package is not what it seems`,
          );
        }
        if (recorded !== undefined || byPrisma.has(migration.name)) {
          result.present.push(migration.name);
          continue;
        }
        if (!missing.has(migration.name)) {
          await session.query(`INSERT INTO ${LEDGER} (name, checksum) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`, [migration.name, migration.checksum]);
          result.present.push(migration.name);
          continue;
        }
        await session.query('BEGIN');
        try {
          await session.query(migration.sql);
          await session.query(`INSERT INTO ${LEDGER} (name, checksum) VALUES ($1, $2)`, [migration.name, migration.checksum]);
          await session.query('COMMIT');
        } catch (error) {
          await session.query('ROLLBACK').catch(() => {});
          throw new Error(`Fanout migration ${migration.name} failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
        }
        result.applied.push(migration.name);
      }
      return result;
    } finally {
      await session.query('SELECT pg_advisory_unlock($1::bigint)', [LOCK_KEY]).catch(() => {});
    }
  } finally {
    await session.close();
  }
}
