import { describe, expect, it } from 'vitest';
import { finished, testApp, waitFor } from './fixtures/harness.ts';

// `options.manager.dispatchAtSubmit`: a small task is listed by submit() and stored with its items
// and their jobs in one transaction, with no manager job; a bigger one, or a listing that throws,
// is left to the manager job.
describe('dispatch at submit', () => {
  /** The manager jobs pg-boss holds for a task (its id is the task's). */
  async function managerJobs(t: Awaited<ReturnType<typeof testApp>>, taskId: string): Promise<number> {
    const [row] = await t.app.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'test_batch_manager' AND id = ${taskId}::uuid`;
    return row!.n;
  }

  it('a small task is running with all its items when submit() returns, and runs without a manager job', async () => {
    await using t = await testApp({ dispatchAtSubmit: 50 });
    const events: string[] = [];
    t.app.fanout.events.on('task.submitted', (e) => void events.push(`${e.id} ${e.status} ${e.total}`));
    const task = await t.app.fanout.submit('test_batch', { count: 20, pageOf: 7 }, { tenant: 'small' });
    expect(task).toMatchObject({ status: 'running', total: 20, succeeded: 0, replayed: false });
    expect(task.dispatchedAt).toBeInstanceOf(Date);
    expect(events).toEqual([`${task.id} running 20`]);
    expect(await managerJobs(t, task.id)).toBe(0);
    const { rows } = await t.app.fanout.listItems(task.id, { limit: 50 });
    expect(rows.map((r) => [r.key, r.seq, r.status])).toEqual(Array.from({ length: 20 }, (_, n) => [`item-${n}`, n + 1, 'pending']));

    const [worker] = await t.spawnWorkers(1, { FANOUT_CONCURRENCY: 5 });
    expect(await finished(t, task.id)).toMatchObject({ status: 'completed', total: 20, succeeded: 20, failed: 0 });
    await waitFor(() => worker!.lines.some((l) => l === `FANIN ${task.id} 1 completed`), { message: 'the fan-in, run by the worker' });
    expect(await managerJobs(t, task.id)).toBe(0);
  });

  it('a task with more items than that, or whose listing throws at submit, is dispatched by its manager', async () => {
    await using t = await testApp({ dispatchAtSubmit: 50 });
    const big = await t.app.fanout.submit('test_batch', { count: 51 });
    expect(big).toMatchObject({ status: 'queued', total: 0 });
    expect(big.dispatchedAt).toBeNull();
    expect(await managerJobs(t, big.id)).toBe(1);
    // The listing throws at submit (after 3 items): the manager lists it again, fails, and stops the task.
    const broken = await t.app.fanout.submit('test_batch', { count: 5, managerFailAfter: 3 });
    expect(broken).toMatchObject({ status: 'queued', total: 0 });
    expect(await managerJobs(t, broken.id)).toBe(1);

    await t.spawnWorkers(1, { FANOUT_CONCURRENCY: 10 });
    expect(await finished(t, big.id)).toMatchObject({ status: 'completed', total: 51, succeeded: 51 });
    expect(await finished(t, broken.id)).toMatchObject({ status: 'failed', stopReason: 'manager_failed' });
  });

  it('a task whose items all failed validation ends at submit; an idempotent resubmit returns it', async () => {
    await using t = await testApp({ dispatchAtSubmit: 50 });
    await t.spawnWorkers(1);
    const ended: string[] = [];
    t.app.fanout.events.on('task.failed', (e) => void ended.push(`failed ${e.id}`));
    t.app.fanout.events.on('task.completed', (e) => void ended.push(`completed ${e.id}`));
    const task = await t.app.fanout.submit('test_batch', { count: 3, badSnapshotEvery: 1 }, { idempotencyKey: 'all-bad' });
    const stored = await t.app.fanout.getTask(task.id);
    expect(stored).toMatchObject({ total: 3, failed: 3, succeeded: 0 });
    expect(stored!.completedAt).toBeInstanceOf(Date);
    expect(['completed', 'failed']).toContain(stored!.status);
    // This process ended it, so it announces it.
    await waitFor(() => ended.length === 1, { message: 'the ending announced' });
    expect(ended).toEqual([`${stored!.status} ${task.id}`]);
    const again = await t.app.fanout.submit('test_batch', { count: 3, badSnapshotEvery: 1 }, { idempotencyKey: 'all-bad' });
    expect(again).toMatchObject({ id: task.id, replayed: true });
    const { rows } = await t.app.fanout.listItems(task.id, { limit: 10 });
    expect(rows).toHaveLength(3);
    expect(rows.every((r) => r.status === 'failed' && r.error?.code === 'validation')).toBe(true);
  });

  it("a tenant's waiting jobs taken in the moment before a submit commits: the submit gives it new ones", async () => {
    await using t = await testApp({ dispatchAtSubmit: 50 });
    const waiting = async () => {
      const [row] = await t.app.prisma.$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'test_batch_items' AND state = 'created' AND singleton_key LIKE '%:race'`;
      return row!.n;
    };
    // No worker yet: the first task's jobs wait, one per slot of the tenant's window.
    const first = await t.app.fanout.submit('test_batch', { count: 5 }, { tenant: 'race' });
    const slots = await waiting();
    expect(slots).toBeGreaterThan(0);
    // The second submit finds every slot waiting, so its own jobs are skipped by the queue. As a
    // worker's fetch could in the moment before the submit commits, a deferred trigger takes the
    // waiting jobs away at its commit (their claims would have seen neither task's items, and
    // ended their chains).
    await t.app.prisma.$executeRawUnsafe(`
      CREATE FUNCTION take_waiting_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM pgboss.job WHERE name = 'test_batch_items' AND state = 'created' AND singleton_key LIKE '%:race';
        RETURN NULL;
      END $$`);
    await t.app.prisma.$executeRawUnsafe(`
      CREATE CONSTRAINT TRIGGER take_waiting_jobs AFTER INSERT ON fanout_task DEFERRABLE INITIALLY DEFERRED
      FOR EACH ROW WHEN (NEW.idempotency_key = 'race') EXECUTE FUNCTION take_waiting_jobs()`);
    const second = await t.app.fanout.submit('test_batch', { count: 5 }, { tenant: 'race', idempotencyKey: 'race' });
    expect(second.status).toBe('running');
    // Topped up after the commit: the tenant has its window again, and both tasks run without
    // waiting for the maintenance loop's check of quiet tasks (a minute).
    expect(await waiting()).toBe(slots);
    await t.spawnWorkers(1);
    expect(await finished(t, first.id, 20_000)).toMatchObject({ status: 'completed', succeeded: 5 });
    expect(await finished(t, second.id, 20_000)).toMatchObject({ status: 'completed', succeeded: 5 });
  });
});
