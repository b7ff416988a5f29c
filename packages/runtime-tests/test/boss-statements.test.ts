import { createFanout, nameRecurringStatements, type BossDb } from '@fanout/core';
import { openPrismaDatabase } from '@fanout/kit';
import { migrationsDir } from '@fanout/prisma-adapter';
import { createTestDatabase } from '@fanout/testdb';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { PrismaClient } from '../generated/prisma/client.ts';
import { testDefinition } from './fixtures/definitions.ts';
import { waitFor } from './fixtures/harness.ts';

/**
 * pg-boss's database as its default one is (a `pg` pool's `query(text, values)`), on one
 * connection, so that the connection's prepared statements can be read back through it.
 */
async function oneConnection() {
  const db = await createTestDatabase();
  const pool = new pg.Pool({ connectionString: db.url, max: 1 });
  const boss: BossDb = { executeSql: (text, values) => pool.query(text, values) };
  const named = async () =>
    (await pool.query<{ name: string }>(`SELECT name FROM pg_prepared_statements WHERE name LIKE 'pgboss\\_%' ORDER BY name`)).rows.map((r) => r.name);
  return {
    boss,
    pool,
    named,
    async [Symbol.asyncDispose]() {
      await pool.end();
      await db.drop();
    },
  };
}

describe("pg-boss's recurring statements, named", () => {
  it('names a statement from its second run, and answers as before', async () => {
    await using c = await oneConnection();
    nameRecurringStatements(c.boss);
    const text = 'SELECT $1::int + 1 AS n';
    expect((await c.boss.executeSql(text, [1])).rows).toEqual([{ n: 2 }]);
    expect(await c.named()).toEqual([]); // once: not named
    expect((await c.boss.executeSql(text, [2])).rows).toEqual([{ n: 3 }]);
    expect((await c.boss.executeSql(text, [3])).rows).toEqual([{ n: 4 }]);
    expect(await c.named()).toHaveLength(1); // prepared once on the connection
  });

  it('sends a text of several commands unnamed, every time', async () => {
    await using c = await oneConnection();
    nameRecurringStatements(c.boss);
    await c.pool.query('CREATE TABLE t (a int)');
    const text = 'BEGIN; INSERT INTO t VALUES (1); COMMIT;';
    for (let i = 0; i < 3; i++) await c.boss.executeSql(text);
    expect((await c.pool.query('SELECT count(*)::int AS n FROM t')).rows[0].n).toBe(3);
    expect(await c.named()).toEqual([]);
  });

  it('goes on unnamed when a migration changed what a named statement returns', async () => {
    await using c = await oneConnection();
    nameRecurringStatements(c.boss);
    await c.pool.query('CREATE TABLE t (a int); INSERT INTO t VALUES (1)');
    const text = 'SELECT * FROM t';
    await c.boss.executeSql(text);
    await c.boss.executeSql(text);
    expect(await c.named()).toHaveLength(1);
    await c.pool.query('ALTER TABLE t ADD COLUMN b int DEFAULT 2');
    // The server refuses the named statement's plan (its columns changed): sent again unnamed.
    expect((await c.boss.executeSql(text)).rows).toEqual([{ a: 1, b: 2 }]);
    expect((await c.boss.executeSql(text)).rows).toEqual([{ a: 1, b: 2 }]);
  });

  // Texts that vary with a value written into them, as a statement built by string would.
  const fiveTextsTwice = async (boss: BossDb) => {
    for (let round = 0; round < 2; round++) for (let i = 0; i < 5; i++) await boss.executeSql(`SELECT ${i} AS n`);
  };

  it('names at most maxNamed statements', async () => {
    await using c = await oneConnection();
    nameRecurringStatements(c.boss, { maxNamed: 2 });
    await fiveTextsTwice(c.boss);
    expect(await c.named()).toHaveLength(2);
  });

  it('remembers at most maxSeen texts: one seen after that is never named', async () => {
    await using c = await oneConnection();
    nameRecurringStatements(c.boss, { maxSeen: 3 });
    await fiveTextsTwice(c.boss);
    expect(await c.named()).toHaveLength(3);
  });

  it('passes an error of the statement on', async () => {
    await using c = await oneConnection();
    nameRecurringStatements(c.boss);
    const text = 'SELECT 1 / $1::int AS n';
    await c.boss.executeSql(text, [1]);
    await expect(c.boss.executeSql(text, [0])).rejects.toMatchObject({ code: '22012' }); // division by zero, named
    expect((await c.boss.executeSql(text, [1])).rows).toEqual([{ n: 1 }]);
  });

  it("leaves a db given in pg-boss's options as it is: it gets text", async () => {
    await using db = await createTestDatabase({ migrations: [migrationsDir] });
    const database = openPrismaDatabase({ databaseUrl: db.url, prisma: (adapter) => new PrismaClient({ adapter }) });
    const pool = new pg.Pool({ connectionString: db.url, max: 4 });
    let notText = 0;
    let statements = 0;
    const own: BossDb = {
      executeSql: (text, values) => {
        statements++;
        if (typeof text !== 'string') notText++;
        return pool.query(text, values);
      },
    };
    const fanout = createFanout({ store: database.store, boss: { db: own }, definitions: [testDefinition({ dispatchAtSubmit: 10 })], worker: { concurrency: 5 } });
    try {
      await fanout.start();
      const task = await fanout.submit('test_batch', { count: 5 });
      await waitFor(async () => (await fanout.getTask(task.id))?.status === 'completed', { message: 'the task completed' });
      expect(statements).toBeGreaterThan(10);
      expect(notText).toBe(0);
    } finally {
      await fanout.stop();
      await pool.end();
      await database.close();
    }
  });
});
