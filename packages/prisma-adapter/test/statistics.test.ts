import { createTestDatabase, type TestDatabase } from '@fanout/testdb';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationsDir, prismaFanoutStore } from '../src/index.ts';
import { PrismaClient } from './generated/client.ts';

// A dispatch refreshes the item table's statistics as it doubles. An autovacuum of the table holds
// a lock that ANALYZE waits for, and a request still waiting after deadlock_timeout cancels the
// autovacuum: under a steady load the table was then never vacuumed. The refresh gives up instead.
describe('refreshing the item statistics', () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  let prisma: PrismaClient;

  beforeAll(async () => {
    db = await createTestDatabase({ migrations: [migrationsDir] });
    pool = new pg.Pool({ connectionString: db.url, max: 4 });
    prisma = new PrismaClient({ adapter: new PrismaPg(pool, { disposeExternalPool: false }) });
  });
  afterAll(async () => {
    await prisma?.$disconnect();
    await pool?.end();
    await db?.drop();
  });

  for (const through of ['prisma', 'pool'] as const) {
    it(`gives up, without an error, while a vacuum's lock is held on the table, and leaves the holder alone (through ${through})`, async () => {
      const store = through === 'pool' ? prismaFanoutStore(prisma, { pool }) : prismaFanoutStore(prisma);
      // What an autovacuum holds: SHARE UPDATE EXCLUSIVE, the lock ANALYZE asks for too.
      const vacuum = await pool.connect();
      try {
        await vacuum.query('BEGIN');
        await vacuum.query('LOCK TABLE fanout_item IN SHARE UPDATE EXCLUSIVE MODE');
        await store.refreshStatistics!();
        // The holder is untouched: its transaction still holds the lock.
        const { rows } = await vacuum.query<{ held: boolean }>(
          `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE relation = 'fanout_item'::regclass AND mode = 'ShareUpdateExclusiveLock' AND granted AND pid = pg_backend_pid()) AS held`,
        );
        expect(rows[0]!.held).toBe(true);
        await vacuum.query('COMMIT');
      } finally {
        vacuum.release();
      }
      // With the table free, the statistics are refreshed.
      await store.refreshStatistics!();
      const { rows } = await pool.query<{ analyzed: boolean }>(`SELECT last_analyze IS NOT NULL AS analyzed FROM pg_stat_user_tables WHERE relname = 'fanout_item'`);
      expect(rows[0]!.analyzed).toBe(true);
    });
  }
});
