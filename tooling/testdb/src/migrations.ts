import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from 'pg';
import { withClient } from './sql.ts';

/** A migrations source: a Prisma-style migrations folder or a single `.sql` file (path or file URL). */
export type MigrationSource = string | URL;

export interface Migration {
  /** Subfolder name (`20240101000000_init`) or, for a plain `.sql` file, its file name. */
  name: string;
  /** sha256 (hex) of the SQL text. */
  checksum: string;
  sql: string;
  /** Absolute path of the SQL file. */
  file: string;
}

/** Table that records applied migrations, always in the `public` schema. */
export const MIGRATIONS_TABLE = 'public._fanout_migrations';

/** pg_advisory_lock key serialising migration runs against one database. */
const MIGRATION_LOCK_KEY = '7310046238540034001';

function toPath(source: MigrationSource): string {
  return source instanceof URL ? fileURLToPath(source) : path.resolve(source);
}

function compareNames(a: string, b: string): number {
  // Plain code-unit order, independent of the machine's locale.
  return a < b ? -1 : a > b ? 1 : 0;
}

async function readMigration(name: string, file: string): Promise<Migration> {
  const sql = await fs.readFile(file, 'utf8');
  return { name, file, sql, checksum: createHash('sha256').update(sql).digest('hex') };
}

async function isFile(file: string): Promise<boolean> {
  try {
    return (await fs.stat(file)).isFile();
  } catch {
    return false;
  }
}

/**
 * Reads migrations from `sources`, in the given order of sources. A directory is read like a
 * Prisma migrations folder: every subfolder holding a `migration.sql` is one migration named
 * after the subfolder; `.sql` files directly inside the directory are migrations too, named
 * after the file. Within one directory migrations are ordered by name (code-unit order).
 * Other entries (e.g. `migration_lock.toml`) are ignored. A source that is a `.sql` file is one
 * migration named after the file. Names must be unique across all sources.
 */
export async function loadMigrations(sources: readonly MigrationSource[]): Promise<Migration[]> {
  const result: Migration[] = [];
  const seen = new Map<string, string>();
  for (const source of sources) {
    const sourcePath = toPath(source);
    let stat;
    try {
      stat = await fs.stat(sourcePath);
    } catch {
      throw new Error(`Migrations source not found: ${sourcePath}`);
    }
    const batch: Migration[] = [];
    if (stat.isFile()) {
      if (!sourcePath.endsWith('.sql')) throw new Error(`Migrations source is a file but not .sql: ${sourcePath}`);
      batch.push(await readMigration(path.basename(sourcePath), sourcePath));
    } else if (stat.isDirectory()) {
      const entries = await fs.readdir(sourcePath, { withFileTypes: true });
      for (const entry of entries) {
        const entryPath = path.join(sourcePath, entry.name);
        if (entry.isDirectory()) {
          const file = path.join(entryPath, 'migration.sql');
          if (await isFile(file)) batch.push(await readMigration(entry.name, file));
        } else if (entry.name.endsWith('.sql') && (await isFile(entryPath))) {
          batch.push(await readMigration(entry.name, entryPath));
        }
      }
      batch.sort((a, b) => compareNames(a.name, b.name));
    } else {
      throw new Error(`Migrations source is neither a file nor a directory: ${sourcePath}`);
    }
    for (const migration of batch) {
      const previous = seen.get(migration.name);
      if (previous !== undefined) {
        throw new Error(`Duplicate migration name ${JSON.stringify(migration.name)}: ${previous} and ${migration.file}`);
      }
      seen.set(migration.name, migration.file);
      result.push(migration);
    }
  }
  return result;
}

/** A stable hash over names and contents of `migrations` (in order). */
export function migrationsHash(migrations: readonly Migration[]): string {
  const hash = createHash('sha256');
  for (const m of migrations) hash.update(`${m.name}\0${m.checksum}\0`);
  return hash.digest('hex');
}

/** Applies `migrations` on a connected client; see {@link applyMigrations}. */
export async function applyLoadedMigrations(client: Client, migrations: readonly Migration[]): Promise<string[]> {
  await client.query('SELECT pg_advisory_lock($1::bigint)', [MIGRATION_LOCK_KEY]);
  try {
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE} (
        name text PRIMARY KEY,
        checksum text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`,
    );
    const { rows } = await client.query<{ name: string; checksum: string }>(
      `SELECT name, checksum FROM ${MIGRATIONS_TABLE}`,
    );
    const applied = new Map(rows.map((row) => [row.name, row.checksum]));
    const newlyApplied: string[] = [];
    for (const migration of migrations) {
      const checksum = applied.get(migration.name);
      if (checksum !== undefined) {
        if (checksum !== migration.checksum) {
          throw new Error(
            `Migration ${migration.name} was already applied but its SQL has changed since (${migration.file}). ` +
              'Write a new migration instead of editing an applied one, or recreate the database.',
          );
        }
        continue;
      }
      await client.query('BEGIN');
      try {
        await client.query(migration.sql);
        await client.query(`INSERT INTO ${MIGRATIONS_TABLE} (name, checksum) VALUES ($1, $2)`, [
          migration.name,
          migration.checksum,
        ]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        const message = error instanceof Error ? error.message : String(error);
        throw new Error(`Migration ${migration.name} failed (${migration.file}): ${message}`, { cause: error });
      }
      newlyApplied.push(migration.name);
    }
    return newlyApplied;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1::bigint)', [MIGRATION_LOCK_KEY]).catch(() => {});
  }
}

/**
 * Applies migrations idempotently to the database at `url`: migrations already recorded in
 * `public._fanout_migrations` are skipped (an applied migration whose SQL changed is an error),
 * the others run in order, each in its own transaction together with its bookkeeping row.
 * Concurrent callers on the same database are serialised with an advisory lock.
 * `sources` are read by {@link loadMigrations}. Returns the names of the migrations applied now.
 */
export async function applyMigrations(url: string, sources: readonly MigrationSource[]): Promise<string[]> {
  const migrations = await loadMigrations(sources);
  return withClient(url, (client) => applyLoadedMigrations(client, migrations));
}
