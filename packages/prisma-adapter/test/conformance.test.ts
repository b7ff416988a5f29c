import { runStoreConformance } from '@fanout/core/testing';
import { createTestDatabase, type TestDatabase } from '@fanout/testdb';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { prismaFanoutStore, migrationsDir } from '../src/index.ts';
import { PrismaClient } from './generated/client.ts';

// The store passes the same suite with Prisma alone and with the adapter's pool given as `pool`
// (statements outside transactions then go straight through it).
for (const mode of ['prisma', 'prisma with pool'] as const) {
  let db: TestDatabase;
  let prisma: PrismaClient;

  runStoreConformance(mode, {
    async setup() {
      db = await createTestDatabase({ migrations: [migrationsDir] });
      if (mode === 'prisma') {
        prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: db.url, max: 10 }) });
        return prismaFanoutStore(prisma);
      }
      const pool = new pg.Pool({ connectionString: db.url, max: 10 });
      prisma = new PrismaClient({ adapter: new PrismaPg(pool, { disposeExternalPool: true }) });
      return prismaFanoutStore(prisma, { pool });
    },
    async teardown() {
      await prisma?.$disconnect();
      await db?.drop();
    },
    async tamperCounters(taskId, counters) {
      await prisma.$executeRaw`
        UPDATE fanout_task SET succeeded = COALESCE(${counters.succeeded ?? null}::int, succeeded),
          failed = COALESCE(${counters.failed ?? null}::int, failed), total = COALESCE(${counters.total ?? null}::int, total)
        WHERE id = ${taskId}::uuid`;
    },
  });
}
