import { waitFor } from '@fanout/testdb';
import { PrismaPg } from '@prisma/adapter-pg';
import { describe, expect, it } from 'vitest';
import { prismaFanoutStore } from '../src/index.ts';
import { testDatabase } from './database.ts';
import { PrismaClient } from './generated/client.ts';

describe('item log lines', () => {
  const t = testDatabase();

  it("of a task deleted while its batch is stored are skipped, and the other tasks' lines kept", async () => {
    const store = prismaFanoutStore(new PrismaClient({ adapter: new PrismaPg(t.pool, { disposeExternalPool: false }) }), { pool: t.pool });
    const task = async () => {
      const created = await store.createTask({ kind: 'logs', input: {}, maxAttempts: 3 }, async () => {});
      await store.startDispatch(created.id);
      await store.insertItems(created.id, [{ key: 'k', seq: 1, snapshot: {} }], async () => {});
      const [item] = (await store.listItems(created.id, { limit: 1 })).rows;
      return { taskId: created.id, itemId: item!.id };
    };
    const going = await task();
    const kept = await task();
    // The task is deleted in a transaction not yet committed: the batch's statement still sees it,
    // and its insert waits on the task's row until the delete commits.
    const deleter = await t.pool.connect();
    try {
      await deleter.query('BEGIN');
      await deleter.query('DELETE FROM fanout_task WHERE id = $1', [going.taskId]);
      const { rows } = await deleter.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      const at = new Date();
      const appended = store.appendItemLogs([
        { ...going, attempt: 1, at, message: 'of the task going' },
        { ...kept, attempt: 1, at, message: 'of the task kept' },
      ]);
      await waitFor(async () => (await t.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))', [rows[0]!.pid])).rows[0]!.n > 0, {
        message: 'the batch waiting on the deleted task',
      });
      await deleter.query('COMMIT');
      await appended;
    } finally {
      deleter.release();
    }
    expect((await store.itemLogs(kept.taskId, kept.itemId, 10)).map((l) => l.message)).toEqual(['of the task kept']);
    expect(await store.itemLogs(going.taskId, going.itemId, 10)).toEqual([]);
  });

  it('of a task whose purge is under way are skipped once it commits: none outlives the purge', async () => {
    const store = prismaFanoutStore(new PrismaClient({ adapter: new PrismaPg(t.pool, { disposeExternalPool: false }) }), { pool: t.pool });
    const created = await store.createTask({ kind: 'logs', input: {}, maxAttempts: 3 }, async () => {});
    await store.startDispatch(created.id);
    await store.insertItems(created.id, [{ key: 'k', seq: 1, snapshot: {} }], async () => {});
    const [item] = (await store.listItems(created.id, { limit: 1 })).rows;
    // A purge batch as retention runs it (the task's row held, marked purged, its lines deleted),
    // not yet committed: the batch of lines waits for it, then skips the task (its row stays).
    const purger = await t.pool.connect();
    try {
      await purger.query('BEGIN');
      await purger.query('SELECT id FROM fanout_task WHERE id = $1 FOR UPDATE', [created.id]);
      await purger.query('UPDATE fanout_task SET purged_at = now(), purging = true WHERE id = $1', [created.id]);
      await purger.query('DELETE FROM fanout_item_log WHERE task_id = $1', [created.id]);
      const { rows } = await purger.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      const appended = store.appendItemLogs([{ taskId: created.id, itemId: item!.id, attempt: 1, at: new Date(), message: 'logged after its item ended' }]);
      await waitFor(async () => (await t.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))', [rows[0]!.pid])).rows[0]!.n > 0, {
        message: 'the batch waiting on the purge',
      });
      await purger.query('COMMIT');
      await appended;
    } finally {
      // (A failed step leaves no transaction holding the task's row for the teardown to wait on.)
      await purger.query('ROLLBACK').catch(() => {});
      purger.release();
    }
    const { rows } = await t.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM fanout_item_log WHERE task_id = $1', [created.id]);
    expect(rows[0]!.n).toBe(0);
  });
});
