import { createTestDatabase, waitFor } from '@fanout/testdb';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { migrationsDir, prismaFanoutStore } from '../src/index.ts';
import { testDatabase } from './database.ts';
import { PrismaClient } from './generated/client.ts';

// A dispatch refreshes the item table's statistics as it doubles. An autovacuum of the table holds
// a lock that ANALYZE waits for, and a request still waiting after deadlock_timeout cancels the
// autovacuum: under a steady load the table was then never vacuumed. The refresh gives up instead.
describe('refreshing the item statistics', () => {
  const t = testDatabase();

  for (const through of ['prisma', 'pool'] as const) {
    it(`gives up, without an error, while a vacuum's lock is held on the table, and leaves the holder alone (through ${through})`, async () => {
      const store = through === 'pool' ? prismaFanoutStore(t.prisma, { pool: t.pool }) : prismaFanoutStore(t.prisma);
      // What an autovacuum holds: SHARE UPDATE EXCLUSIVE, the lock ANALYZE asks for too.
      const vacuum = await t.pool.connect();
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
      const { rows } = await t.pool.query<{ analyzed: boolean }>(`SELECT last_analyze IS NOT NULL AS analyzed FROM pg_stat_user_tables WHERE relname = 'fanout_item'`);
      expect(rows[0]!.analyzed).toBe(true);
    });
  }
});

// An item table holding earlier tasks' items already has statistics that say it is large: an
// ANALYZE at every doubling of a dispatch sampled the whole table while the dispatch waited.
describe('refreshing the statistics of a table that holds many rows already', () => {
  const t = testDatabase();

  it('analyzes a table only when the dispatched rows are at least a tenth of what its statistics count', async () => {
    // Autovacuum stays out of the way: its lock would make the refresh give up.
    await t.pool.query('ALTER TABLE fanout_item SET (autovacuum_enabled = false)');
    await t.pool.query('ALTER TABLE fanout_ready SET (autovacuum_enabled = false)');
    const store = prismaFanoutStore(t.prisma, { pool: t.pool });
    const task = await store.createTask({ kind: 'statistics_test', input: {}, maxAttempts: 1 }, async () => {});
    await store.startDispatch(task.id);
    for (let from = 0; from < 20_000; from += 1000) {
      await store.insertItems(task.id, Array.from({ length: 1000 }, (_, i) => ({ key: `k${from + i}`, seq: from + i + 1, snapshot: { i } })), async () => {});
    }
    await t.pool.query('ANALYZE fanout_item');
    await t.pool.query('ANALYZE fanout_ready');
    const read = async () =>
      (
        await t.pool.query<{ name: string; analyzes: number; rows: number }>(
          `SELECT s.relname AS name, s.analyze_count::int AS analyzes, c.reltuples::float8 AS rows
           FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
           WHERE s.relname IN ('fanout_item', 'fanout_ready') ORDER BY s.relname`,
        )
      ).rows;
    const before = await read();
    const [item, ready] = before;
    expect(item!.name).toBe('fanout_item');
    expect(item!.rows).toBeGreaterThanOrEqual(20_000);
    expect(ready!.rows).toBeGreaterThanOrEqual(20_000);
    // Fewer than a tenth of either table's counted rows: neither is analyzed.
    await store.refreshStatistics!(Math.floor(Math.min(item!.rows, ready!.rows) / 10) - 1);
    expect((await read()).map((r) => r.analyzes)).toEqual(before.map((r) => r.analyzes));
    // A tenth of the item table's rows or more: both are.
    await store.refreshStatistics!(Math.ceil(Math.max(item!.rows, ready!.rows) / 10));
    expect((await read()).map((r) => r.analyzes)).toEqual(before.map((r) => r.analyzes + 1));
    // Without a count, as before: both.
    await store.refreshStatistics!();
    expect((await read()).map((r) => r.analyzes)).toEqual(before.map((r) => r.analyzes + 2));
  });
});

// Under a steady load autovacuum visits a database at most once a minute, and the item table's dead
// versions pile up in between: the maintenance loop vacuums Fanout's tables once they have many.
// Each test has a database of its own: a table is vacuumed at most once in 10 s.
describe('vacuuming the tables with many dead rows', () => {
  async function fresh() {
    const db = await createTestDatabase({ migrations: [migrationsDir] });
    const pool = new pg.Pool({ connectionString: db.url, max: 4 });
    const prisma = new PrismaClient({ adapter: new PrismaPg(pool, { disposeExternalPool: false }) });
    // Autovacuum stays out of the way, so what the test sees is the store's doing.
    await pool.query('ALTER TABLE fanout_item SET (autovacuum_enabled = false)');
    const stats = async () =>
      (
        await pool.query<{ dead: number; vacuums: number }>(
          `SELECT n_dead_tup::int AS dead, (vacuum_count + autovacuum_count)::int AS vacuums FROM pg_stat_user_tables WHERE relname = 'fanout_item'`,
        )
      ).rows[0]!;
    return {
      pool,
      prisma,
      stats,
      /** n item rows inserted and deleted (what retention does to a finished task's items), counted as dead. */
      async deadItems(n: number) {
        const store = prismaFanoutStore(prisma, { pool });
        const task = await store.createTask({ kind: 'vacuum_test', input: {}, maxAttempts: 1 }, async () => {});
        await store.startDispatch(task.id);
        for (let from = 0; from < n; from += 1000) {
          await store.insertItems(task.id, Array.from({ length: 1000 }, (_, i) => ({ key: `k${from + i}`, seq: from + i + 1, snapshot: { i } })), async () => {});
        }
        await pool.query('DELETE FROM fanout_item WHERE task_id = $1', [task.id]);
        await waitFor(async () => (await stats()).dead >= n, { message: 'the deleted rows counted as dead' });
      },
      async [Symbol.asyncDispose]() {
        await prisma.$disconnect();
        await pool.end();
        await db.drop();
      },
    };
  }

  for (const through of ['prisma', 'pool'] as const) {
    it(`vacuums the item table once its dead rows pass the threshold, and not again at once (through ${through})`, async () => {
      await using t = await fresh();
      const store = through === 'pool' ? prismaFanoutStore(t.prisma, { pool: t.pool }) : prismaFanoutStore(t.prisma);
      await t.deadItems(5000);
      // Below the threshold (10,000 dead rows): left to autovacuum.
      expect(await store.vacuumTables!()).toEqual([]);
      await t.deadItems(10_000);
      const before = await t.stats();
      expect(await store.vacuumTables!()).toEqual(['fanout_item']);
      await waitFor(async () => (await t.stats()).vacuums > before.vacuums, { message: 'the vacuum counted' });
      expect((await t.stats()).dead).toBeLessThan(1000);
      // Vacuumed a moment ago: not again, even with many dead rows.
      await t.deadItems(12_000);
      expect(await store.vacuumTables!()).toEqual([]);
    });
  }

  it('vacuums the claim table after a few hundred dead claims, not ten thousand', async () => {
    await using t = await fresh();
    await t.pool.query('ALTER TABLE fanout_claim SET (autovacuum_enabled = false)');
    const store = prismaFanoutStore(t.prisma, { pool: t.pool });
    const claimStats = async () =>
      (await t.pool.query<{ dead: number }>(`SELECT n_dead_tup::int AS dead FROM pg_stat_user_tables WHERE relname = 'fanout_claim'`)).rows[0]!.dead;
    // Claims of 100 items that ended: each a row inserted and deleted.
    const deadClaims = async (n: number) => {
      const before = await claimStats();
      await t.pool.query(
        `INSERT INTO fanout_claim (token, kind, tenant, item_ids, lease_until)
         SELECT gen_random_uuid(), 'vacuum_test', '', array(SELECT gen_random_uuid() FROM generate_series(1, 100) WHERE g > 0), now() FROM generate_series(1, $1::int) g`,
        [n],
      );
      await t.pool.query('DELETE FROM fanout_claim');
      await waitFor(async () => (await claimStats()) >= before + n, { message: 'the ended claims counted as dead' });
    };
    await deadClaims(300);
    expect(await store.vacuumTables!()).toEqual([]);
    await deadClaims(300);
    expect(await store.vacuumTables!()).toEqual(['fanout_claim']);
    await waitFor(async () => (await claimStats()) === 0, { message: 'the claim table vacuumed' });
  });

  it('does not wait for a table another vacuum holds', async () => {
    await using t = await fresh();
    const store = prismaFanoutStore(t.prisma, { pool: t.pool });
    await t.deadItems(12_000);
    const holder = await t.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE fanout_item IN SHARE UPDATE EXCLUSIVE MODE');
      const before = await t.stats();
      // Returns while the lock is still held (a VACUUM that waited would hang here until the commit).
      expect(await store.vacuumTables!()).toEqual(['fanout_item']);
      expect(await t.stats()).toEqual(before);
      await holder.query('COMMIT');
    } finally {
      holder.release();
    }
  });
});
