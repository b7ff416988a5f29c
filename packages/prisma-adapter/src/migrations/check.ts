import { FanoutError } from '@fanout/core';
import type { PrismaQueryable } from '../prisma-like.ts';
import { missingFrom, PROBE_SQL } from './list.ts';

/** The Fanout migrations the database behind `db` lacks, in the order they must run. */
export async function missingFanoutMigrations(db: Pick<PrismaQueryable, '$queryRawUnsafe'>): Promise<string[]> {
  const rows = await db.$queryRawUnsafe<Array<Record<string, unknown>>>(PROBE_SQL);
  return missingFrom(rows[0]);
}

/** How to apply what is missing, for error messages and the CLI. */
export const HOW_TO_MIGRATE =
  'apply Fanout\'s migrations with `npx fanout migrate` (or copy them into your Prisma migrations with `npx fanout copy-migrations prisma/migrations` and run `prisma migrate deploy`)';

/** Throws `schema_outdated` naming the first missing migration, unless none is missing. */
export async function assertFanoutSchema(db: Pick<PrismaQueryable, '$queryRawUnsafe'>): Promise<void> {
  const missing = await missingFanoutMigrations(db);
  if (missing.length === 0) return;
  const more = missing.length > 1 ? ` and ${missing.length - 1} later one${missing.length > 2 ? 's' : ''} (${missing.slice(1).join(', ')})` : '';
  throw new FanoutError('schema_outdated', `the database lacks the Fanout migration ${missing[0]}${more}: ${HOW_TO_MIGRATE}`);
}
