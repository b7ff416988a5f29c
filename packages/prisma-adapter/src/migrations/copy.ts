import fs from 'node:fs/promises';
import path from 'node:path';
import { schemaPath } from '../paths.ts';
import { readFanoutMigrations } from './files.ts';

export interface CopyResult {
  /** Folders (or files) written now. */
  copied: string[];
  /** Already there with the same content. */
  unchanged: string[];
}

async function readIfExists(file: string): Promise<string | null> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/**
 * Copies every Fanout migration folder into your Prisma migrations folder (`prisma/migrations`),
 * so `prisma migrate deploy` applies them with yours, in timestamp order. Idempotent: folders
 * already there with the same SQL are left alone; one with other SQL is an error (released
 * migrations are never edited), and nothing is written then. Run it again after an upgrade.
 */
export async function copyFanoutMigrations(targetDir: string): Promise<CopyResult> {
  const target = path.resolve(targetDir);
  const migrations = await readFanoutMigrations();
  const result: CopyResult = { copied: [], unchanged: [] };
  const toWrite: typeof migrations = [];
  for (const migration of migrations) {
    const existing = await readIfExists(path.join(target, migration.name, 'migration.sql'));
    if (existing === null) toWrite.push(migration);
    else if (existing === migration.sql) result.unchanged.push(migration.name);
    else {
      throw new Error(
        `${path.join(target, migration.name, 'migration.sql')} differs from the one @fanout/prisma-adapter ships; released migrations are never edited: restore it (git checkout) and copy again`,
      );
    }
  }
  for (const migration of toWrite) {
    await fs.mkdir(path.join(target, migration.name), { recursive: true });
    await fs.writeFile(path.join(target, migration.name, 'migration.sql'), migration.sql);
    result.copied.push(migration.name);
  }
  return result;
}

/**
 * Writes the Fanout models (`fanout.prisma`) into your schema folder (a multi-file schema), or
 * brings them up to date after an upgrade. Returns whether the file changed.
 */
export async function copyFanoutSchema(schemaDir: string): Promise<{ file: string; changed: boolean }> {
  const file = path.join(path.resolve(schemaDir), 'fanout.prisma');
  const models = await fs.readFile(schemaPath, 'utf8');
  if ((await readIfExists(file)) === models) return { file, changed: false };
  await fs.mkdir(path.dirname(file), { recursive: true });
  await fs.writeFile(file, models);
  return { file, changed: true };
}
