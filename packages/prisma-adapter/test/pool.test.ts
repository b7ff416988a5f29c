import { createTestDatabase, type TestDatabase } from '@fanout/testdb';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationsDir } from '../src/index.ts';
import { executor } from '../src/executor.ts';
import { poolQueryable, poolTransaction } from '../src/pool.ts';

// The transactions the store runs on a `pg` pool (`PrismaFanoutStoreOptions.pool`) keep the
// bounds of Prisma's interactive transactions.
describe('pool transactions', () => {
  let db: TestDatabase;
  let pool: pg.Pool;

  beforeAll(async () => {
    db = await createTestDatabase({ migrations: [migrationsDir] });
    pool = new pg.Pool({ connectionString: db.url, max: 1 });
  });
  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  const slots = async () => (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM fanout_slot WHERE name = 'pool_test'`)).rows[0]!.n;

  it('commits, and rolls back everything when the callback throws', async () => {
    await poolTransaction(pool, { maxWait: 1000, timeout: 5000 }, async (tx) => tx.$queryRaw`INSERT INTO fanout_slot (name, slot) VALUES ('pool_test', ${1}::int)`);
    await expect(
      poolTransaction(pool, { maxWait: 1000, timeout: 5000 }, async (tx) => {
        await tx.$queryRaw`INSERT INTO fanout_slot (name, slot) VALUES ('pool_test', ${2}::int)`;
        throw new Error('callback failed');
      }),
    ).rejects.toThrow('callback failed');
    expect(await slots()).toBe(1);
  });

  it('gives up waiting for a connection after maxWait, and the late connection goes back to the pool', async () => {
    const held = await pool.connect();
    const waiting = poolTransaction(pool, { maxWait: 100, timeout: 5000 }, async (tx) => tx.$queryRaw`SELECT 1`);
    await expect(waiting).rejects.toMatchObject({ name: 'TimeoutError', message: expect.stringContaining('maxWait') });
    held.release();
    // The pool has one connection: this only works if the late one was released.
    await expect(poolTransaction(pool, { maxWait: 1000, timeout: 5000 }, async (tx) => tx.$queryRaw<{ one: number }[]>`SELECT 1 AS one`)).resolves.toEqual([{ one: 1 }]);
  });

  it('ends a transaction that runs past its timeout, and the pool stays usable', async () => {
    await expect(poolTransaction(pool, { maxWait: 1000, timeout: 100 }, async (tx) => tx.$queryRawUnsafe('SELECT pg_sleep(2)'))).rejects.toMatchObject({ code: '57014' });
    await expect(poolTransaction(pool, { maxWait: 1000, timeout: 5000 }, async (tx) => tx.$queryRaw<{ one: number }[]>`SELECT 1 AS one`)).resolves.toEqual([{ one: 1 }]);
  });

  it('survives the connection dying mid-transaction: the transaction rejects, the process lives on', async () => {
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    try {
      const lost = poolTransaction(pool, { maxWait: 1000, timeout: 5000 }, async (tx) => {
        const [row] = await tx.$queryRaw<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
        // The server ends this session while the transaction is idle (a restart, a terminated
        // backend): pg reports it as an 'error' event on a client nobody else listens to.
        await admin.query('SELECT pg_terminate_backend($1)', [row!.pid]);
        await tx.$queryRaw`SELECT 1`;
      });
      await expect(lost).rejects.toThrow();
      // The broken connection was dropped; the pool makes a new one.
      await expect(poolTransaction(pool, { maxWait: 1000, timeout: 5000 }, async (tx) => tx.$queryRaw<{ one: number }[]>`SELECT 1 AS one`)).resolves.toEqual([{ one: 1 }]);
    } finally {
      await admin.end();
    }
  });

  it('prepares each statement once per connection, and sends it unnamed once a migration changed its result', async () => {
    await pool.query('CREATE TABLE pool_plan (id int)');
    await pool.query('INSERT INTO pool_plan VALUES (1)');
    const db = poolQueryable(pool);
    // One call site, as in the store's SQL modules.
    const read = (q: typeof db) => q.$queryRaw<Array<Record<string, unknown>>>`SELECT * FROM pool_plan WHERE id >= ${0}::int`;
    const prepared = async () => (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_prepared_statements WHERE statement LIKE '%FROM pool_plan%'`)).rows[0]!.n;
    expect(await read(db)).toEqual([{ id: 1 }]);
    expect(await prepared()).toBe(1); // the pool's one connection
    await pool.query('ALTER TABLE pool_plan ADD COLUMN note text');
    // The prepared form now fails ("cached plan must not change result type"): sent unnamed.
    expect(await read(db)).toEqual([{ id: 1, note: null }]);
    // Inside a transaction the refusal fails the transaction, which runs once more.
    await pool.query('ALTER TABLE pool_plan ADD COLUMN other int');
    const txRead = (q: typeof db) => q.$queryRaw<Array<Record<string, unknown>>>`SELECT * FROM pool_plan WHERE id <= ${9}::int`;
    await poolTransaction(pool, { maxWait: 1000, timeout: 5000 }, async (tx) => txRead(tx));
    await pool.query('ALTER TABLE pool_plan ADD COLUMN third int');
    let runs = 0;
    const rows = await poolTransaction(pool, { maxWait: 1000, timeout: 5000 }, async (tx) => {
      runs++;
      return txRead(tx);
    });
    expect(rows).toEqual([{ id: 1, note: null, other: null, third: null }]);
    expect(runs).toBe(2);
    // A text that recurs (pg-boss's, through the executor pg-boss is given) is prepared once too.
    const boss = executor(poolQueryable(pool));
    const text = 'SELECT count(*)::int AS n FROM pool_plan WHERE id > $1';
    for (const floor of [0, 5]) await boss.executeSql(text, [floor]);
    expect((await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_prepared_statements WHERE statement = $1`, [text])).rows[0]!.n).toBe(1);
    // Without prepared statements, nothing is prepared.
    const before = await prepared();
    await poolQueryable(pool, { prepared: false }).$queryRaw`SELECT id FROM pool_plan WHERE id = ${1}::int`;
    expect(await prepared()).toBe(before);
  });
});
