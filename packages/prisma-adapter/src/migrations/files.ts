import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { migrationsDir } from '../paths.ts';
import { FANOUT_MIGRATIONS } from './list.ts';

export interface MigrationFile {
  name: string;
  sql: string;
  /** sha256 (hex) of the SQL text, as the `_fanout_migrations` ledger records it. */
  checksum: string;
}

/** The SQL of every Fanout migration, in order, read from the package's `prisma/migrations`. */
export async function readFanoutMigrations(): Promise<MigrationFile[]> {
  return Promise.all(
    FANOUT_MIGRATIONS.map(async ({ name }) => {
      const sql = await fs.readFile(path.join(migrationsDir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    }),
  );
}
