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
  let pool: pg.Pool;

  runStoreConformance(mode, {
    async setup() {
      db = await createTestDatabase({ migrations: [migrationsDir] });
      // The pool is ours in both modes, so the teardown closes it before the database goes (idle
      // connections the drop terminated would be errors nobody listens for).
      pool = new pg.Pool({ connectionString: db.url, max: 10 });
      prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
      return mode === 'prisma' ? prismaFanoutStore(prisma) : prismaFanoutStore(prisma, { pool });
    },
    async teardown() {
      await prisma?.$disconnect();
      await pool?.end();
      await db?.drop();
    },
    async tamperCounters(taskId, counters) {
      await prisma.$executeRaw`
        UPDATE fanout_task SET succeeded = COALESCE(${counters.succeeded ?? null}::int, succeeded),
          failed = COALESCE(${counters.failed ?? null}::int, failed), total = COALESCE(${counters.total ?? null}::int, total)
        WHERE id = ${taskId}::uuid`;
    },
    async holdTaskRow(taskId) {
      const writer = await pool.connect();
      await writer.query('BEGIN');
      await writer.query('UPDATE fanout_task SET updated_at = updated_at WHERE id = $1', [taskId]);
      const { rows } = await writer.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      const pid = rows[0]!.pid;
      return {
        async waitedFor() {
          const { rows: waiting } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))', [pid]);
          return waiting[0]!.n > 0;
        },
        async release() {
          await writer.query('ROLLBACK');
          writer.release();
        },
      };
    },
  });
}
