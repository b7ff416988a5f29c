import { randomUUID } from 'node:crypto';
import { waitFor } from '@fanout/testdb';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { prismaFanoutStore } from '../src/index.ts';
import { testDatabase } from './database.ts';
import { PrismaClient } from './generated/client.ts';

// An item row is inserted once, then updated by its claim and by its settle. No index of the item
// table involves a column those updates change, so PostgreSQL updates the row in place (HOT): no
// index is written, which made the claim and the settle about twice as fast. What pending and
// claimed items were once found by is kept in `fanout_ready` and `fanout_claim` instead.
describe('the item table', () => {
  const t = testDatabase();

  it('indexes only columns an item never changes after its insert', async () => {
    const { rows } = await t.pool.query<{ name: string; columns: string[]; partial: boolean }>(`
      SELECT c.relname AS name, array_agg(a.attname::text ORDER BY a.attname) AS columns, i.indpred IS NOT NULL AS partial
      FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
      WHERE i.indrelid = 'fanout_item'::regclass
      GROUP BY c.relname, i.indpred, i.indexprs`);
    expect(rows.length).toBeGreaterThan(0);
    for (const index of rows) {
      expect(index.partial, `${index.name} has a predicate`).toBe(false);
      for (const column of index.columns) expect(['id', 'task_id', 'seq', 'key'], `${index.name} indexes ${column}`).toContain(column);
    }
    // No expression index either (its columns would not show in indkey).
    const { rows: expressions } = await t.pool.query(`SELECT 1 FROM pg_index WHERE indrelid = 'fanout_item'::regclass AND indexprs IS NOT NULL`);
    expect(expressions).toEqual([]);
  });

  it('is updated in place by claims, releases and settles (HOT), through the store', async () => {
    // A pool of its own: a backend's table statistics reach pg_stat_user_tables when it exits.
    const own = new pg.Pool({ connectionString: t.db.url, max: 2 });
    const store = prismaFanoutStore(new PrismaClient({ adapter: new PrismaPg(own, { disposeExternalPool: false }) }), { pool: own });
    const before = await updates();
    const task = await store.createTask({ kind: 'hot', input: {}, maxAttempts: 3 }, async () => {});
    await store.startDispatch(task.id);
    const items = Array.from({ length: 200 }, (_, i) => ({ key: `k${i}`, seq: i + 1, snapshot: { i } }));
    await store.insertItems(task.id, items, async () => {});
    await store.finishDispatch(task.id);
    for (let round = 0; round < 4; round++) {
      const token = randomUUID();
      const { claimed } = await store.claimNext({ kind: 'hot', tenant: null, after: null, limit: 50, token, leaseMs: 30_000 });
      expect(claimed).toHaveLength(50);
      // One released for a retry, the others settled.
      await store.releaseItems([{ itemId: claimed[0]!.itemId, token, error: { code: 'busy', message: 'later' }, delayMs: 0 }], async () => {});
      await store.settleItems(claimed.slice(1).map((c) => ({ itemId: c.itemId, token, status: 'succeeded' as const, result: null })));
      await store.endClaims([token]);
    }
    await own.end();
    // 200 claims, 4 releases, 196 settles.
    const after = await waitFor(async () => {
      const now = await updates();
      return now.updated - before.updated >= 400 ? now : null;
    }, { timeoutMs: 20_000, message: 'the item updates counted in pg_stat_user_tables' });
    expect(after.updated - before.updated).toBe(400);
    // Nearly all: an update is HOT only when its page has room, which pruning the row's older
    // versions makes, and a page may go unpruned while a transaction of any database on the
    // server started before those versions died (the quick test of which versions are still
    // needed goes by the oldest transaction anywhere; the exact one, per database, is made only
    // now and then). In a full parallel run a few updates found their page full: 398 of 400, in
    // two fresh-clone CI runs out of four, with or without autovacuum.
    // An index on a column these statements change would make all of one kind non-HOT: the 200
    // claims, or the 196 settles.
    expect(after.hot - before.hot).toBeGreaterThanOrEqual(380);
  });

  it('takes new items at the end of its primary key: their ids are time-ordered, in listing order', async () => {
    const store = prismaFanoutStore(t.prisma, { pool: t.pool });
    const paged = await store.createTask({ kind: 'ids', input: {}, maxAttempts: 3 }, async () => {});
    await store.startDispatch(paged.id);
    for (let page = 0; page < 3; page++) {
      await store.insertItems(paged.id, Array.from({ length: 400 }, (_, i) => ({ key: `k${page * 400 + i}`, seq: page * 400 + i + 1, snapshot: null })), async () => {});
    }
    // A task stored with its items at submit, after the first.
    const { task: whole } = await store.createDispatchedTask!(
      { kind: 'ids', input: {}, maxAttempts: 3 },
      Array.from({ length: 300 }, (_, i) => ({ key: `k${i}`, seq: i + 1, snapshot: null })),
      async () => {},
      null,
    );
    const { rows } = await t.pool.query<{ id: string }>('SELECT id::text FROM fanout_item WHERE task_id = ANY($1::uuid[]) ORDER BY task_id, seq', [[paged.id, whole.id]]);
    const ids = rows.map((r) => r.id);
    expect(ids).toHaveLength(1500);
    expect(ids.every((id) => id[14] === '7')).toBe(true);
    expect([...ids].sort()).toEqual(ids);
  });

  async function updates(): Promise<{ updated: number; hot: number }> {
    const { rows } = await t.pool.query<{ updated: string; hot: string }>(
      `SELECT n_tup_upd AS updated, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE relname = 'fanout_item'`,
    );
    return { updated: Number(rows[0]!.updated), hot: Number(rows[0]!.hot) };
  }
});
