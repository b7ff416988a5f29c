import { describe, expect, it } from 'vitest';
import { finished, testApp, waitFor, type TestApp } from './fixtures/harness.ts';

// Fair shares, checked by state rather than by time: how far a large task got while a small one
// (submitted after it) ran from start to end. First in, first out, the large task would have
// finished first; with turns, the small one finishes while the large one has most of its items
// still to run.

const settled = async (t: TestApp, id: string) => {
  const task = (await t.app.fanout.getTask(id))!;
  return task.succeeded + task.failed + task.cancelled;
};

/**
 * How many of `big`'s remaining items settled while `small` ran (a fraction), read from the rows
 * once `small` has ended, by the database's clock: from the moment a manager took `small` up to its
 * completion. Its dispatch is inside that window; the wait for a manager to fetch its job is not,
 * since it does not depend on the order items are served in (8-235 ms with two heavy tests beside
 * this one; a CI run that counted from the submit, through the API, once measured 25%). Prints
 * `small`'s timeline.
 */
async function shareWhileRunning(t: TestApp, big: string, small: string): Promise<number> {
  expect((await finished(t, small)).status).toBe('completed');
  const [row] = await t.app.prisma.$queryRaw<{ total: number; before: number; during: number; timeline: Record<string, number> }[]>`
    WITH s AS (SELECT created_at, started_at, dispatched_at, completed_at FROM fanout_task WHERE id = ${small}::uuid)
    SELECT (SELECT total FROM fanout_task WHERE id = ${big}::uuid) AS total,
           count(*) FILTER (WHERE i.finished_at <= s.started_at)::int AS before,
           count(*) FILTER (WHERE i.finished_at > s.started_at AND i.finished_at <= s.completed_at)::int AS during,
           json_build_object(
             'managerStarted', round(extract(epoch FROM s.started_at - s.created_at) * 1000),
             'dispatched', round(extract(epoch FROM s.dispatched_at - s.created_at) * 1000),
             'completed', round(extract(epoch FROM s.completed_at - s.created_at) * 1000)) AS timeline
    FROM s LEFT JOIN fanout_item i ON i.task_id = ${big}::uuid
    GROUP BY s.created_at, s.started_at, s.dispatched_at, s.completed_at`;
  console.log(`the task submitted second, ms after its submit: ${JSON.stringify(row!.timeline)}`);
  return row!.during / (row!.total - row!.before);
}

describe('scheduling', () => {
  // A 4,000-item task is under way when a 10-item one arrives: of another tenant, or of the same.
  for (const [title, smallTenant] of [
    ["tenants take turns: a small task of another tenant does not wait for a large task's items", 'small'],
    ['tasks of one tenant take turns too', 'big'],
  ] as const) {
    it(title, async () => {
      await using t = await testApp();
      await t.spawnWorkers(2, { FANOUT_CONCURRENCY: 10 });
      const big = await t.app.fanout.submit('test_batch', { count: 4000, item: { sleepMs: 20 } }, { tenant: 'big' });
      await waitFor(async () => (await settled(t, big.id)) >= 100, { message: 'the large task under way' });
      const small = await t.app.fanout.submit('test_batch', { count: 10, item: { sleepMs: 20 } }, { tenant: smallTenant });
      const share = await shareWhileRunning(t, big.id, small.id);
      console.log(`${smallTenant === 'big' ? 'tasks' : 'tenants'}: the large task settled ${(share * 100).toFixed(1)}% of its remaining items while the small one ran`);
      expect(share).toBeLessThan(0.25);
      expect(await finished(t, big.id, 120_000)).toMatchObject({ status: 'completed', succeeded: 4000 });
    }, 150_000);
  }

  it('a tenant working alone keeps its workers: its claims go on without a job each', async () => {
    await using t = await testApp();
    await t.spawnWorkers(1, { FANOUT_CONCURRENCY: 10 });
    // Claims of at most 20 items (10 handlers and 10 held ahead): 100 of them at least.
    const task = await t.app.fanout.submit('test_batch', { count: 2000 }, { tenant: 'alone' });
    expect(await finished(t, task.id, 60_000)).toMatchObject({ status: 'completed', succeeded: 2000, failed: 0 });
    const [row] = await t.app.prisma.$queryRaw<{ jobs: number }[]>`SELECT count(*)::int AS jobs FROM pgboss.job WHERE name = 'test_batch_items'`;
    console.log(`alone: ${row!.jobs} child jobs for 2,000 items`);
    // A job per claim would be 100 or more; a job that keeps its worker hands on at most once a second.
    expect(row!.jobs).toBeLessThan(40);
  });

  it('a higher priority is served first among a tenant\'s tasks', async () => {
    await using t = await testApp();
    await t.spawnWorkers(2, { FANOUT_CONCURRENCY: 10 });
    const low = await t.app.fanout.submit('test_batch', { count: 3000, item: { sleepMs: 20 } }, { tenant: 'a' });
    await waitFor(async () => (await settled(t, low.id)) >= 100, { message: 'the low-priority task under way' });
    // As large as the rest of the low one: taking turns, both would progress alike.
    const high = await t.app.fanout.submit('test_batch', { count: 1500, item: { sleepMs: 20 } }, { tenant: 'a', priority: 10 });
    expect((await t.app.fanout.getTask(high.id))!.priority).toBe(10);
    const share = await shareWhileRunning(t, low.id, high.id);
    console.log(`priority: the low-priority task settled ${(share * 100).toFixed(1)}% of its remaining items while the high one ran`);
    expect(share).toBeLessThan(0.2);
    expect(await finished(t, low.id, 120_000)).toMatchObject({ status: 'completed', succeeded: 3000 });
  }, 150_000);

  it('a capped tenant\'s next task starts when one ends, without waiting for the maintenance loop', async () => {
    await using t = await testApp();
    // The loop's check of quiet tasks, which would also start a waiting task, is out of reach here.
    await t.spawnWorkers(1, { FANOUT_CONCURRENCY: 10, FANOUT_TENANT_MAX_RUNNING_TASKS: 1, FANOUT_RECONCILE_IDLE_MS: 600_000 });
    const tasks = [];
    for (let i = 0; i < 3; i++) tasks.push(await t.app.fanout.submit('test_batch', { count: 40, item: { sleepMs: 20 } }, { tenant: 'q' }));
    for (const task of tasks) expect(await finished(t, task.id, 30_000)).toMatchObject({ status: 'completed', succeeded: 40 });
    // One at a time: each started once the one before had ended.
    const rows = await t.app.prisma.$queryRaw<{ first: Date; completed: Date }[]>`
      SELECT min(i.started_at) AS first, t.completed_at AS completed FROM fanout_task t JOIN fanout_item i ON i.task_id = t.id
      WHERE t.tenant = 'q' GROUP BY t.id, t.completed_at ORDER BY min(i.started_at)`;
    for (let i = 1; i < rows.length; i++) expect(rows[i]!.first.getTime()).toBeGreaterThanOrEqual(rows[i - 1]!.completed.getTime());
  }, 60_000);

  it("a capped tenant's next task starts when its running task is cancelled, not once that task's last items end", async () => {
    await using t = await testApp();
    await t.spawnWorkers(1, { FANOUT_CONCURRENCY: 10, FANOUT_TENANT_MAX_RUNNING_TASKS: 1, FANOUT_RECONCILE_IDLE_MS: 600_000 });
    // Its two items ignore their abort signal: after the cancel they run on for seconds.
    const first = await t.app.fanout.submit('test_batch', { count: 2, item: { stubbornMs: 6000 } }, { tenant: 'q' });
    await waitFor(async () => (await t.app.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM fanout_item WHERE task_id = ${first.id}::uuid AND status = 'running'`)[0]!.n === 2, { message: 'both items running' });
    const next = await t.app.fanout.submit('test_batch', { count: 3 }, { tenant: 'q' });
    // The next task waits behind the cap: dispatched, the jobs its dispatch queued found nothing to
    // claim and ended, and none is left in the queue to serve it.
    await waitFor(async () => (await t.app.fanout.getTask(next.id))!.dispatchedAt !== null, { message: 'the next task dispatched' });
    await waitFor(
      async () => (await t.app.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'test_batch_child' AND state IN ('created', 'retry', 'active')`)[0]!.n === 0,
      { message: 'the child queue to be empty' },
    );
    expect(await settled(t, next.id)).toBe(0);
    await t.app.fanout.cancel(first.id);
    // A stopping task no longer holds the cap: the next one runs while the cancelled one's items
    // are still running, so it completes first.
    const done = await finished(t, next.id, 30_000);
    expect(done).toMatchObject({ status: 'completed', succeeded: 3 });
    const ended = await finished(t, first.id, 30_000);
    expect(ended.status).toBe('cancelled');
    expect(done.completedAt!.getTime()).toBeLessThan(ended.completedAt!.getTime());
  }, 60_000);

  it('a tenant named like an object property (constructor, toString, __proto__) is served like any other', async () => {
    await using t = await testApp();
    await t.spawnWorkers(1, { FANOUT_CONCURRENCY: 10, FANOUT_TENANT_WEIGHTS: JSON.stringify({ other: 2 }) });
    const tasks = await Promise.all(['constructor', 'toString', '__proto__', 'hasOwnProperty'].map((tenant) => t.app.fanout.submit('test_batch', { count: 5 }, { tenant })));
    for (const task of tasks) expect(await finished(t, task.id, 30_000)).toMatchObject({ status: 'completed', succeeded: 5 });
  }, 60_000);

  it('per-tenant quotas: items in flight across processes, and running tasks served at once', async () => {
    await using t = await testApp();
    await t.spawnWorkers(2, { FANOUT_CONCURRENCY: 10, FANOUT_TENANT_MAX_IN_FLIGHT: 3, FANOUT_TENANT_MAX_RUNNING_TASKS: 1 });
    const quota = await Promise.all([1, 2, 3].map(() => t.app.fanout.submit('test_batch', { count: 30, item: { sleepMs: 50 } }, { tenant: 'q' })));
    const other = await t.app.fanout.submit('test_batch', { count: 60, item: { sleepMs: 50 } }, { tenant: 'r' });
    const seen = { q: 0, qTasks: 0, total: 0 };
    await waitFor(
      async () => {
        const [row] = await t.app.prisma.$queryRaw<{ q: number; q_tasks: number; total: number }[]>`
          SELECT count(*) FILTER (WHERE t.tenant = 'q')::int AS q,
                 count(DISTINCT i.task_id) FILTER (WHERE t.tenant = 'q')::int AS q_tasks,
                 count(*)::int AS total
          FROM fanout_item i JOIN fanout_task t ON t.id = i.task_id WHERE i.status = 'running'`;
        seen.q = Math.max(seen.q, row!.q);
        seen.qTasks = Math.max(seen.qTasks, row!.q_tasks);
        seen.total = Math.max(seen.total, row!.total);
        const tasks = await Promise.all([...quota, other].map((task) => t.app.fanout.getTask(task.id)));
        return tasks.every((task) => task!.status === 'completed');
      },
      { timeoutMs: 90_000, intervalMs: 10, message: 'every task completed' },
    );
    expect(seen.q).toBeLessThanOrEqual(3);
    expect(seen.q).toBeGreaterThan(0);
    expect(seen.qTasks).toBe(1);
    // The other tenant was not held back by the first one's quota (its own is 3 too).
    expect(seen.total).toBeGreaterThan(3);
    for (const task of quota) expect(await t.app.fanout.getTask(task.id)).toMatchObject({ succeeded: 30, failed: 0 });
  }, 120_000);
});
