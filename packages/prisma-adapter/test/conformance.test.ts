import { runStoreConformance } from '@fanout/core/testing';
import { createTestDatabase, type TestDatabase } from '@fanout/testdb';
import { PrismaPg } from '@prisma/adapter-pg';
import { prismaFanoutStore, migrationsDir } from '../src/index.ts';
import { PrismaClient } from './generated/client.ts';

let db: TestDatabase;
let prisma: PrismaClient;

runStoreConformance('prisma', {
  async setup() {
    db = await createTestDatabase({ migrations: [migrationsDir] });
    prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: db.url, max: 10 }) });
    return prismaFanoutStore(prisma);
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
