import fs from 'node:fs/promises';
import path from 'node:path';
import { createFanout, defineFanout, FanoutError } from '@fanout/core';
import { createTestDatabase, type TestDatabase } from '@fanout/testdb';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PgBoss } from 'pg-boss';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { applyFanoutMigrations, FANOUT_MIGRATIONS, migrationsDir, prismaFanoutStore } from '../src/index.ts';
import { PrismaClient } from './generated/client.ts';

// What start() asks of the database and of the pg-boss it is given, as an app meets it.

const databases: TestDatabase[] = [];
const pools: pg.Pool[] = [];
afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.end()));
  await Promise.all(databases.map((db) => db.drop()));
});

async function database(migrations: string[] = [migrationsDir]): Promise<{ url: string; pool: pg.Pool }> {
  const db = await createTestDatabase({ name: 'start', migrations });
  databases.push(db);
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  pools.push(pool);
  return { url: db.url, pool };
}

const definition = defineFanout({
  name: 'start_check',
  input: z.object({ n: z.number().int() }),
  item: z.object({ i: z.number().int() }),
  async *listItems({ n }) {
    for (let i = 0; i < n; i++) yield { key: String(i), snapshot: { i } };
  },
  async runItem({ i }) {
    return { double: i * 2 };
  },
});

describe('start() checks the schema', () => {
  it('refuses to start on a database that lacks a migration, naming it, and starts once it is applied', async () => {
    const { url, pool } = await database([]);
    const [init, events, limit, ...later] = FANOUT_MIGRATIONS.map((m) => m.name);
    for (const name of [init!, events!]) await pool.query(await fs.readFile(path.join(migrationsDir, name, 'migration.sql'), 'utf8'));
    // Through Prisma's own query path (no `pool`): the probe's booleans come back as booleans.
    const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: url, max: 2 }) });
    const fanout = createFanout({ store: prismaFanoutStore(prisma), boss: { connectionString: url }, definitions: [definition] });
    const refused = await fanout.start().catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(FanoutError);
    expect(refused).toMatchObject({
      code: 'schema_outdated',
      message: `the database lacks the Fanout migration ${limit} and ${later.length} later ${later.length === 1 ? 'one' : 'ones'} (${later.join(', ')}): apply Fanout's migrations with \`npx fanout migrate\` (or copy them into your Prisma migrations with \`npx fanout copy-migrations prisma/migrations\` and run \`prisma migrate deploy\`)`,
    });
    // Nothing was started: pg-boss has not even created its schema.
    expect((await pool.query(`SELECT to_regnamespace('pgboss') IS NULL AS none`)).rows[0].none).toBe(true);

    await applyFanoutMigrations(pool);
    await fanout.start({ managers: false, children: false, maintenance: false, presence: false });
    await fanout.stop();
    await prisma.$disconnect();
  });
});

describe("start() with the app's own PgBoss", () => {
  it('uses an instance from another copy of pg-boss as it is (no instanceof), and leaves it running', async () => {
    const { url, pool } = await database();
    const boss = new PgBoss({ connectionString: url });
    boss.on('error', () => {});
    await boss.start();
    // What a second copy of pg-boss looks like from here: the same methods, another class.
    const foreign = new Proxy(boss, {
      getPrototypeOf: () => Object.prototype,
      get(target, property) {
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    expect(foreign instanceof PgBoss).toBe(false);
    const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
    const fanout = createFanout({ store: prismaFanoutStore(prisma, { pool }), boss: foreign, definitions: [definition] });
    expect(fanout.boss).toBe(foreign);
    await fanout.start({ presence: false, maintenance: false });
    const { id } = await fanout.submit(definition, { n: 20 });
    const done = await new Promise<{ succeeded: number }>((resolve) => fanout.events.on('task.completed', (task) => {
      if (task.id === id) resolve(task);
    }));
    expect(done.succeeded).toBe(20);
    await fanout.stop();
    // The runtime does not stop what it does not own.
    expect(await boss.isInstalled()).toBe(true);
    await boss.send('start_check_manager', {}).then((jobId) => expect(jobId).toEqual(expect.any(String)));
    await boss.stop({ graceful: false });
    await prisma.$disconnect();
  });
});

describe('start() and the table pg-boss keeps the child queue in', () => {
  it("works its tasks with pg-boss in a schema of its own: the jobs, and the runtime's reads of a tenant's waiting jobs", async () => {
    const { url, pool } = await database();
    const atSubmit = defineFanout({ ...definition, name: 'start_schema', options: { manager: { dispatchAtSubmit: 100 } } });
    await submitsOfOneTenant(url, pool, atSubmit, 'app_jobs');
    const { rows } = await pool.query<{ ours: boolean; default: boolean }>(`SELECT to_regnamespace('app_jobs') IS NOT NULL AS ours, to_regnamespace('pgboss') IS NOT NULL AS default`);
    expect(rows[0]).toEqual({ ours: true, default: false });
  });

  it('works its tasks when the child queue is in the table pg-boss shares between queues (made before it had a partition of its own)', async () => {
    const { url, pool } = await database();
    const atSubmit = defineFanout({ ...definition, name: 'start_shared', options: { manager: { dispatchAtSubmit: 100 } } });
    // As an earlier install left it: the queue made without a partition, which createQueue keeps.
    const boss = new PgBoss({ connectionString: url, max: 2, supervise: false, schedule: false });
    await boss.start();
    await boss.createQueue(atSubmit.childQueue, { policy: 'short' });
    await boss.stop({ graceful: false });
    await submitsOfOneTenant(url, pool, atSubmit, undefined);
    const { rows } = await pool.query<{ table_name: string }>(`SELECT table_name FROM pgboss.queue WHERE name = $1`, [atSubmit.childQueue]);
    expect(rows[0]?.table_name).toBe('job_common');
  });
});

/**
 * Seven submits of one tenant side by side: each one after the first finds the tenant's window
 * waiting (or being taken), read from the table pg-boss keeps the child queue in; the last one
 * lists more than the submit takes, so a manager dispatches it (its pages read the window in their
 * transaction). Fails on any error the runtime reports: a read of the wrong table would not lose
 * a task (the runtime inserts the jobs instead), but it is reported.
 */
async function submitsOfOneTenant(url: string, pool: pg.Pool, atSubmit: typeof definition, schema: string | undefined): Promise<void> {
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  const fanout = createFanout({ store: prismaFanoutStore(prisma, { pool }), boss: { connectionString: url, ...(schema ? { schema } : {}) }, definitions: [atSubmit] });
  const errors: string[] = [];
  const allDone = Promise.withResolvers<void>();
  fanout.events.on('error', ({ error, context }) => {
    errors.push(`${context}: ${(error as Error).message}`);
    allDone.resolve(); // the expectations below say what went wrong
  });
  await fanout.start({ presence: false, maintenance: false });
  // Listening first: a task of this process can complete before its submit returns.
  const done = new Map<string, number>();
  fanout.events.on('task.completed', (task) => {
    done.set(task.id, task.succeeded);
    if (done.size === 7) allDone.resolve();
  });
  const sizes = [10, 11, 12, 13, 14, 15, 150];
  const ids = (await Promise.all(sizes.map((n) => fanout.submit(atSubmit, { n }, { tenant: 'team' })))).map((t) => t.id);
  await allDone.promise;
  expect(errors).toEqual([]);
  expect(ids.map((id) => done.get(id))).toEqual(sizes);
  await fanout.stop();
  await prisma.$disconnect();
}
