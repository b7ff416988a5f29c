import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { prismaFanoutStore } from '../src/index.ts';
import type { PrismaQueryable } from '../src/prisma-like.ts';
import { endClaims, renewLeases, runningOfTenant } from '../src/sql/claim.ts';
import { settleAndIncrement } from '../src/sql/settle.ts';
import { testDatabase } from './database.ts';

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

/** A queryable that plans the statements sent through it instead of running them, and keeps the plans. */
function explaining(db: PrismaQueryable): { db: PrismaQueryable; plans: PlanNode[] } {
  const plans: PlanNode[] = [];
  const explain = async (text: string, values: unknown[]) => {
    const [row] = await db.$queryRawUnsafe<{ 'QUERY PLAN': [{ Plan: PlanNode }] }[]>(`EXPLAIN (FORMAT JSON) ${text}`, ...values);
    plans.push(row!['QUERY PLAN'][0].Plan);
    return [{}]; // a row of nothing, for the callers that read one
  };
  return {
    plans,
    db: {
      $queryRaw: (strings: TemplateStringsArray, ...values: unknown[]) => explain(strings.reduce((text, part, i) => `${text}$${i}${part}`), values) as never,
      $queryRawUnsafe: (text: string, ...values: unknown[]) => explain(text, values) as never,
    },
  };
}

/** Every table a plan reads from start to end (a sequential scan), by name. */
function scanned(node: PlanNode): string[] {
  const own = node['Node Type'] === 'Seq Scan' && node['Relation Name'] ? [node['Relation Name']] : [];
  return [...own, ...(node.Plans ?? []).flatMap(scanned)];
}

// The statements that run for every claim read its items by key: their cost follows the claim's
// size, not the item table's. With the table analyzed at 20,000 items, the planner would join a
// claim's item ids with the whole table (a hash join over a sequential scan: 8 ms at 40,000 items,
// and more with every item) wherever the statement lets it.
describe('the plans of the per-claim statements', () => {
  const t = testDatabase();

  it('read the items of a claim by key, never the whole item table', async () => {
    const store = prismaFanoutStore(t.prisma, { pool: t.pool });
    const task = await store.createTask({ kind: 'plans', tenant: 'a', input: {}, maxAttempts: 3 }, async () => {});
    await store.startDispatch(task.id);
    for (let page = 0; page < 20; page++) {
      const items = Array.from({ length: 1000 }, (_, i) => ({ key: `k${page * 1000 + i}`, seq: page * 1000 + i + 1, snapshot: { i } }));
      await store.insertItems(task.id, items, async () => {});
    }
    await store.finishDispatch(task.id);
    // Ten claims in flight; the claim table was never analyzed (as in a busy run: autovacuum's
    // analyze of it comes and goes), the item table was.
    const claims = [];
    for (let i = 0; i < 10; i++) {
      const token = randomUUID();
      const { claimed } = await store.claimNext({ kind: 'plans', tenant: 'a', after: null, limit: 10, token, leaseMs: 30_000 });
      expect(claimed).toHaveLength(10);
      claims.push({ token, claimed });
    }
    await t.pool.query('ANALYZE fanout_item');

    const { db, plans } = explaining(t.prisma);
    await endClaims(db, claims.map((c) => c.token));
    await renewLeases(db, claims.flatMap((c) => c.claimed.map((item) => ({ itemId: item.itemId, token: c.token }))), 30_000);
    await runningOfTenant(db, 'plans', 'a');
    // The settle of every claim's items at once (a group commit of 100 outcomes).
    await settleAndIncrement(db, claims.flatMap((c) => c.claimed.map((item) => ({ itemId: item.itemId, token: c.token, status: 'succeeded' as const, result: null }))));
    expect(plans).toHaveLength(4);
    for (const [i, plan] of plans.entries()) expect(scanned(plan), `statement ${i + 1}`).not.toContain('fanout_item');
  });
});

/**
 * How often the store's prepared statement whose text holds `part` was planned on the pool's
 * connection (a pool of one: `pg_prepared_statements` shows the session's own statements).
 */
async function planCounts(pool: pg.Pool, part: string): Promise<{ generic: number; custom: number }> {
  const { rows } = await pool.query<{ statement: string; generic_plans: string; custom_plans: string }>(
    "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements WHERE name LIKE 'fanout\\_%'",
  );
  const statement = rows.find((r) => r.statement.includes(part));
  expect(statement, part).toBeDefined();
  return { generic: Number(statement!.generic_plans), custom: Number(statement!.custom_plans) };
}

// A statement that PostgreSQL plans again at every run costs the server its planning each time
// (the claim's took longer to plan than to run). A prepared statement keeps its generic plan from
// the sixth run on when that plan looks no worse than the custom ones; a custom plan that sees a
// parameter's value (a limit, an array's length, the tenant) looks better, so those parameters are
// written as scalar subqueries that no plan sees.
describe('the statements of a worker’s loop', () => {
  const t = testDatabase(1);

  it('keep their generic plan once a connection has run them a few times', async () => {
    const store = prismaFanoutStore(t.prisma, { pool: t.pool });
    const tasks = [];
    for (const tenant of ['a', 'b']) {
      for (let n = 0; n < 3; n++) {
        const task = await store.createTask({ kind: 'loop', tenant, input: {}, maxAttempts: 3 }, async () => {});
        await store.startDispatch(task.id);
        await store.insertItems(task.id, Array.from({ length: 300 }, (_, i) => ({ key: `k${i}`, seq: i + 1, snapshot: { i } })), async () => {});
        await store.finishDispatch(task.id);
        tasks.push(task);
      }
    }
    const after = new Map<string, string | null>();
    for (let round = 0; round < 24; round++) {
      const tenant = round % 2 === 0 ? 'a' : 'b';
      const token = randomUUID();
      const { claimed, taskId } = await store.claimNext({ kind: 'loop', tenant, after: after.get(tenant) ?? null, limit: 5 + (round % 7) * 9, token, leaseMs: 30_000 });
      expect(claimed.length).toBeGreaterThan(0);
      after.set(tenant, taskId);
      await store.renewLeases(claimed.map((c) => ({ itemId: c.itemId, token })), 30_000);
      await store.stoppedTasks([...new Set(claimed.map((c) => c.taskId))]);
      await store.settleItems(claimed.map((c) => ({ itemId: c.itemId, token, status: 'succeeded' as const, result: null })));
      await store.endClaims!([token]);
    }
    const loop = ['eligible AS', 'fanout_claim c SET lease_until', 'status <> ', 'WITH v AS', 'DELETE FROM fanout_claim'];
    for (const part of loop) {
      const { custom, generic } = await planCounts(t.pool, part);
      expect(custom, `custom plans of the statement with ${part}`).toBeLessThanOrEqual(5);
      expect(generic, `generic plans of the statement with ${part}`).toBeGreaterThanOrEqual(18);
    }
  });
});

// PostgreSQL builds a generic plan again after an ANALYZE of a table the statement reads, and keeps
// it only while it costs no more than the custom plans made so far did on average. An ANALYZE of the
// ready rows while one large task filled them said that every task had thousands of ready rows: the
// claim's generic plan then cost eighty times its first custom plans, and every claim from then on
// was planned again (about 1 ms each on a busy server). The ready rows' task column has a fixed
// ratio of distinct values instead (the migration `fanout_ready_statistics`).
describe('the claim', () => {
  const t = testDatabase(1);

  it('keeps its generic plan through an ANALYZE taken while one large task fills the ready rows', async () => {
    // No autovacuum ANALYZE in between: the test's own are the ones it is about.
    for (const table of ['fanout_task', 'fanout_item', 'fanout_ready']) await t.pool.query(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);
    const store = prismaFanoutStore(t.prisma, { pool: t.pool });
    const submit = async (tenant: string, items: number) => {
      const task = await store.createTask({ kind: 'skew', tenant, input: {}, maxAttempts: 3 }, async () => {});
      await store.startDispatch(task.id);
      for (let from = 0; from < items; from += 2000) {
        const page = Array.from({ length: Math.min(2000, items - from) }, (_, i) => ({ key: `k${from + i}`, seq: from + i + 1, snapshot: { i } }));
        await store.insertItems(task.id, page, async () => {});
      }
      await store.finishDispatch(task.id);
    };
    const plans = () => planCounts(t.pool, 'eligible AS');
    const claim = async (tenant: string) => {
      const { claimed } = await store.claimNext({ kind: 'skew', tenant, after: null, limit: 10, token: randomUUID(), leaseMs: 30_000 });
      expect(claimed).toHaveLength(10);
    };
    for (const tenant of ['a', 'b']) await submit(tenant, 200);
    await t.pool.query('ANALYZE fanout_ready');
    for (let i = 0; i < 8; i++) await claim(i % 2 === 0 ? 'a' : 'b');
    const before = await plans();
    expect(before.generic).toBeGreaterThan(0);

    await submit('big', 12_000);
    await t.pool.query('ANALYZE fanout_ready');
    for (let i = 0; i < 20; i++) await claim(['a', 'b', 'big'][i % 3]!);
    const after = await plans();
    expect(after.custom, 'custom plans made after the ANALYZE').toBe(before.custom);
    expect(after.generic - before.generic).toBe(20);
  });
});
