import { createTestDatabase, type TestDatabase } from '@fanout/testdb';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { migrationsDir } from '../src/index.ts';
import { PrismaClient } from './generated/client.ts';

/**
 * A fresh database with Fanout's migrations for the tests of one `describe` (made before them,
 * dropped after them), with a `pg` pool and a Prisma client on it. Read its fields inside tests.
 */
export function testDatabase(poolSize = 4): { db: TestDatabase; pool: pg.Pool; prisma: PrismaClient } {
  const given = {} as { db: TestDatabase; pool: pg.Pool; prisma: PrismaClient };
  beforeAll(async () => {
    given.db = await createTestDatabase({ migrations: [migrationsDir] });
    given.pool = new pg.Pool({ connectionString: given.db.url, max: poolSize });
    given.prisma = new PrismaClient({ adapter: new PrismaPg(given.pool, { disposeExternalPool: false }) });
  });
  afterAll(async () => {
    await given.prisma?.$disconnect();
    await given.pool?.end();
    await given.db?.drop();
  });
  return given;
}
