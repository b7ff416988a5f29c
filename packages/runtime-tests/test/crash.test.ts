import { createFanout, type FanoutStore } from '@fanout/core';
import { migrationsDir, prismaFanoutStore } from '@fanout/prisma-adapter';
import { createTestDatabase } from '@fanout/testdb';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { PrismaClient } from '../generated/prisma/client.ts';
import { testDefinition } from './fixtures/definitions.ts';
import { finished, testApp, waitFor } from './fixtures/harness.ts';

describe('crashes', () => {
  it('a worker killed with SIGKILL mid-run: its items are taken over and the task completes with exact counts', async () => {
    await using t = await testApp();
    const env = { FANOUT_CONCURRENCY: 10, FANOUT_LEASE_MS: 2000 };
    // The victim works alone until it is killed, so every item claimed at that moment is its own
    // (with two pods, the running items seen just before the kill may all be the other pod's).
    const [victim] = await t.spawnWorkers(1, env);
    // Every 100th item takes 8 s: once one runs, the victim still holds it when it is killed a
    // moment later (between two claims of quick items it may hold nothing, on a loaded machine too).
    const task = await t.app.fanout.submit('test_batch', { count: 1200, item: { sleepMs: 40 }, every: 100, special: { sleepMs: 8000 } });

    // Kill the pod while it holds claimed items, a slow one among them.
    const runningSlow = async () =>
      (await t.app.prisma.$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS n FROM fanout_item WHERE task_id = ${task.id}::uuid AND status = 'running' AND (snapshot->>'sleepMs')::int = 8000`)[0]!.n;
    await waitFor(async () => ((await t.app.fanout.getTask(task.id))?.succeeded ?? 0) >= 100 && (await runningSlow()) > 0, { intervalMs: 20, message: '100 items done and a slow one running' });
    victim!.kill('SIGKILL');
    expect(await victim!.exited).toBeNull();
    // What the victim held when it died stays claimed until its leases lapse.
    const held = await runningSlow();
    expect(held).toBeGreaterThan(0);
    const [survivor] = await t.spawnWorkers(1, env);

    const done = await waitFor(async () => {
      const current = await t.app.fanout.getTask(task.id);
      return current?.status === 'completed' ? current : null;
    }, {
      timeoutMs: 90_000,
      message: 'task completed after the crash',
      describe: async () =>
        JSON.stringify({
          task: await t.app.fanout.getTask(task.id),
          items: await t.app.prisma.$queryRaw`SELECT i.status, i.attempts, c.lease_until < now() AS lapsed, count(*)::int AS n FROM fanout_item i LEFT JOIN fanout_claim c ON c.token = i.claim_token WHERE i.task_id = ${task.id}::uuid GROUP BY 1, 2, 3`,
          jobs: await t.app.prisma.$queryRaw`SELECT state, count(*)::int AS n FROM pgboss.job WHERE name = 'test_batch_child' GROUP BY 1`,
          survivor: survivor?.lines.slice(-5),
        }),
    });
    expect(done).toMatchObject({ total: 1200, succeeded: 1200, failed: 0, cancelled: 0 });
    // Nothing of it is left ready or claimed: the victim's claims were recovered by the maintenance
    // loop, and the survivor forgets its own once their items are settled.
    const left = async () => (await t.app.prisma.$queryRaw<{ ready: number; claims: number }[]>`
      SELECT (SELECT count(*)::int FROM fanout_ready WHERE task_id = ${task.id}::uuid) AS ready, (SELECT count(*)::int FROM fanout_claim) AS claims`)[0]!;
    expect((await left()).ready).toBe(0);
    await waitFor(async () => (await left()).claims === 0, { timeoutMs: 20_000, message: 'every claim forgotten' });

    // The victim's items were taken over: second attempts, claimed again after the first
    // attempt's lease lapsed (by the job's retry, or requeued by the maintenance loop).
    const retaken = await t.app.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM fanout_item WHERE task_id = ${task.id}::uuid AND status = 'succeeded' AND attempts = 2 AND (snapshot->>'sleepMs')::int = 8000`;
    expect(retaken[0]!.n).toBeGreaterThanOrEqual(held);
    const byStatus = await t.app.prisma.$queryRaw<{ status: string; n: number }[]>`
      SELECT status, count(*)::int AS n FROM fanout_item WHERE task_id = ${task.id}::uuid GROUP BY status`;
    expect(byStatus).toEqual([{ status: 'succeeded', n: 1200 }]);
  });

  it('a manager that fails mid-dispatch is retried and neither loses nor duplicates children', async () => {
    await using t = await testApp({ work: true });
    const task = await t.app.fanout.submit('test_batch', { count: 1600, managerCrashAfter: 1100 });
    const done = await waitFor(async () => {
      const current = await t.app.fanout.getTask(task.id);
      return current?.status === 'completed' ? current : null;
    }, { timeoutMs: 60_000, message: 'task completed' });
    expect(done).toMatchObject({ total: 1600, succeeded: 1600, failed: 0 });
    const [shape] = await t.app.prisma.$queryRaw<{ items: number; keys: number; seqs: number; min: number; max: number }[]>`
      SELECT count(*)::int AS items, count(DISTINCT key)::int AS keys, count(DISTINCT seq)::int AS seqs, min(seq) AS min, max(seq) AS max
      FROM fanout_item WHERE task_id = ${task.id}::uuid`;
    expect(shape).toEqual({ items: 1600, keys: 1600, seqs: 1600, min: 1, max: 1600 });
    // Every item ran once, however many times the manager ran.
    const [attempts] = await t.app.prisma.$queryRaw<{ max: number; sum: number }[]>`
      SELECT max(attempts) AS max, sum(attempts)::int AS sum FROM fanout_item WHERE task_id = ${task.id}::uuid`;
    expect(attempts).toEqual({ max: 1, sum: 1600 });
  });

  it('a manager process killed in the middle of its dispatch: the retried manager neither loses nor duplicates children', async () => {
    await using t = await testApp();
    const [first] = await t.spawnWorkers(1, { FANOUT_CONCURRENCY: 1 });
    const task = await t.app.fanout.submit('test_batch', { count: 6000 });
    // Killed while pages go in (two at a time, 500 items each): some committed, one or two in flight.
    await waitFor(async () => {
      const current = await t.app.fanout.getTask(task.id);
      return current && current.total >= 1000 && !current.dispatchedAt;
    }, { intervalMs: 10, message: 'the dispatch under way' });
    first!.kill('SIGKILL');
    const killedAt = (await t.app.fanout.getTask(task.id))!.total;
    expect(killedAt).toBeLessThan(6000);
    // Its manager job's heartbeat stops (10 s here); pg-boss fails it and another process retries it.
    await t.spawnWorkers(1, { FANOUT_CONCURRENCY: 50 });
    const done = await finished(t, task.id, 90_000);
    expect(done).toMatchObject({ status: 'completed', total: 6000, succeeded: 6000, failed: 0 });
    const [shape] = await t.app.prisma.$queryRaw<{ items: number; keys: number; seqs: number; succeeded: number }[]>`
      SELECT count(*)::int AS items, count(DISTINCT key)::int AS keys, count(DISTINCT seq)::int AS seqs, count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded
      FROM fanout_item WHERE task_id = ${task.id}::uuid`;
    expect(shape).toEqual({ items: 6000, keys: 6000, seqs: 6000, succeeded: 6000 });
  }, 120_000);

  it('a large dispatch refreshes the planner statistics of the item table, and the child queue stays a few jobs long', async () => {
    await using t = await testApp({ work: true });
    const task = await t.app.fanout.submit('test_batch', { count: 6000, item: { sleepMs: 1 } });
    let longest = 0;
    await waitFor(async () => {
      const [row] = await t.app.prisma.$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'test_batch_items' AND state IN ('created', 'retry')`;
      longest = Math.max(longest, row!.n);
      return (await t.app.fanout.getTask(task.id))?.status === 'completed';
    }, { timeoutMs: 60_000, intervalMs: 20, message: 'task completed' });
    // One tenant's window (4 jobs), whatever the number of items.
    expect(longest).toBeLessThanOrEqual(4);
    await waitFor(
      async () => {
        const [row] = await t.app.prisma.$queryRaw<{ analyzed: boolean }[]>`
          SELECT last_analyze IS NOT NULL AS analyzed FROM pg_stat_user_tables WHERE relname = 'fanout_item'`;
        return row?.analyzed;
      },
      { timeoutMs: 20_000, message: 'the item table analyzed' },
    );
  });

  it('a rolling deploy during a long dispatch does not use up its manager: stopped three times, the task completes', async () => {
    await using t = await testApp();
    // 1,500 items listed 5 ms apart: a listing takes 7.5 s (a retried one lists from the start,
    // skipping what is stored, its pages growing from 100 again); the manager job allows two retries.
    const task = await t.app.fanout.submit('test_batch', { count: 1500, listDelayMs: 5 });
    let listed = 0;
    for (let restart = 0; restart < 3; restart++) {
      const [worker] = await t.spawnWorkers(1, { FANOUT_GRACE_MS: 1000 });
      // Stopped (SIGTERM, as a deploy does) once this process listed some more.
      const before = listed;
      listed = await waitFor(async () => {
        const total = (await t.app.fanout.getTask(task.id))!.total;
        return total > before ? total : null;
      }, { message: `restart ${restart + 1}: the listing going on`, timeoutMs: 30_000 });
      await worker!.stop();
      expect((await t.app.fanout.getTask(task.id))!.dispatchedAt).toBeNull();
    }
    await t.spawnWorkers(1);
    const done = await finished(t, task.id, 60_000);
    expect(done).toMatchObject({ status: 'completed', total: 1500, succeeded: 1500, stopReason: null });
  });

  it('a manager that fails for good ends the task as failed, what it dispatched counted', async () => {
    await using t = await testApp({ work: true });
    const task = await t.app.fanout.submit('test_batch', { count: 5000, managerFailAfter: 1200, item: { sleepMs: 60_000 } });
    const done = await finished(t, task.id, 30_000);
    expect(done).toMatchObject({ status: 'failed', stopReason: 'manager_failed', error: 'source_unreadable: the source list is unreadable' });
    expect(done.total).toBeGreaterThanOrEqual(700); // the pages committed before the failure (100, 200, 400, then 500 each)
    expect(done.succeeded + done.failed + done.cancelled).toBe(done.total);
    expect(done.dispatchedAt).not.toBeNull();
  });

  it("a manager's failure is shown to the tenant with credentials masked, and stored whatever text it holds", async () => {
    await using t = await testApp({ work: true });
    // A library's message naming a URL with its password and a bearer token, cut inside a character.
    const message = 'GET https://svc:hunter2@example.org/list failed (Authorization: Bearer abc.def.ghi) at ';
    const task = await t.app.fanout.submit('test_batch', { count: 10, managerFailAfter: 0, managerFailMessage: message, managerFailCut: true });
    const done = await finished(t, task.id, 30_000);
    expect(done).toMatchObject({ status: 'failed', stopReason: 'manager_failed', total: 0 });
    expect(done.error).not.toMatch(/hunter2|abc\.def\.ghi/);
    expect(done.error).toMatch(/^source_unreadable: GET https:\/\/svc:.+@example\.org\/list failed .* at \uFFFD$/);
  });

  it('pending items whose jobs were lost get jobs again once the task goes quiet', async () => {
    // submit() stores the task with its items and their jobs (no manager): nothing works them yet.
    await using t = await testApp({ dispatchAtSubmit: 50 });
    const task = await t.app.fanout.submit('test_batch', { count: 30, item: { sleepMs: 100 } });
    expect(task).toMatchObject({ status: 'running', total: 30 });
    // The queued jobs vanish (a database outage sent them to the dead-letter queue, say): none is
    // left to take the items. (A job a worker holds goes on claiming for its tenant while no other
    // job waits, so jobs lost while one runs strand nothing; lost before any runs, they do.)
    await t.app.prisma.$executeRaw`DELETE FROM pgboss.job WHERE name = 'test_batch_items' AND state IN ('created', 'retry')`;
    const [row] = await t.app.prisma.$queryRaw<{ jobs: number; pending: number }[]>`
      SELECT (SELECT count(*)::int FROM pgboss.job WHERE name = 'test_batch_items') AS jobs,
             (SELECT count(*)::int FROM fanout_item WHERE task_id = ${task.id}::uuid AND status = 'pending') AS pending`;
    expect(row).toEqual({ jobs: 0, pending: 30 });
    await t.spawnWorkers(1, { FANOUT_CONCURRENCY: 2, FANOUT_RECONCILE_IDLE_MS: 500 });
    const done = await finished(t, task.id, 30_000);
    expect(done).toMatchObject({ status: 'completed', total: 30, succeeded: 30, failed: 0 });
  });

  it('a task whose manager job died for good is ended by the maintenance loop, not left undispatched', async () => {
    await using t = await testApp(); // nothing works the manager queue here
    const task = await t.app.fanout.submit('test_batch', { count: 10 });
    // As if the manager's process crashed on its last attempt: the job failed, the task started.
    await t.app.prisma.$executeRaw`UPDATE pgboss.job SET state = 'failed' WHERE name = 'test_batch_manager' AND id = ${task.id}::uuid`;
    await t.app.prisma.$executeRaw`UPDATE fanout_task SET status = 'running', updated_at = now() - interval '10 minutes' WHERE id = ${task.id}::uuid`;
    await t.app.fanout.runMaintenance();
    expect(await t.app.fanout.getTask(task.id)).toMatchObject({ status: 'failed', stopReason: 'manager_failed', total: 0 });

    // The same, cancelled by its user meanwhile (or stopped by its deadline): it stays stopping
    // until its dispatch ends, which no manager will do; the loop ends it, as the user asked.
    const cancelled = await t.app.fanout.submit('test_batch', { count: 10 });
    await t.app.prisma.$executeRaw`UPDATE pgboss.job SET state = 'failed' WHERE name = 'test_batch_manager' AND id = ${cancelled.id}::uuid`;
    await t.app.prisma.$executeRaw`UPDATE fanout_task SET status = 'running' WHERE id = ${cancelled.id}::uuid`;
    await t.app.fanout.cancel(cancelled.id);
    expect(await t.app.fanout.getTask(cancelled.id)).toMatchObject({ status: 'stopping', dispatchedAt: null });
    await t.app.prisma.$executeRaw`UPDATE fanout_task SET updated_at = now() - interval '10 minutes' WHERE id = ${cancelled.id}::uuid`;
    await t.app.fanout.runMaintenance();
    expect(await t.app.fanout.getTask(cancelled.id)).toMatchObject({ status: 'cancelled', stopReason: 'cancelled', total: 0, error: null });

    // A manager still queued (just waiting its turn) is left alone.
    const waiting = await t.app.fanout.submit('test_batch', { count: 10 });
    await t.app.prisma.$executeRaw`UPDATE fanout_task SET updated_at = now() - interval '10 minutes' WHERE id = ${waiting.id}::uuid`;
    await t.app.fanout.runMaintenance();
    expect(await t.app.fanout.getTask(waiting.id)).toMatchObject({ status: 'queued' });
  });

  // A batch's jobs complete while its outcomes wait in the group commit; the store here fails the
  // settles `fails` picks (a lost connection, say).
  type Outcomes = Parameters<FanoutStore['settleItems']>[0];
  async function withFlakySettles(fails: (outcomes: Outcomes) => boolean, check: (run: { taskId: string; reported: string[]; prisma: PrismaClient }) => Promise<void>) {
    await using db = await createTestDatabase({ migrations: [migrationsDir] });
    const pool = new pg.Pool({ connectionString: db.url, max: 10 });
    const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
    const store = prismaFanoutStore(prisma, { pool });
    const flaky = new Proxy(store, {
      get(target, property) {
        if (property === 'settleItems') {
          return (outcomes: Outcomes) =>
            fails(outcomes) ? Promise.reject(new Error('connection lost while storing outcomes')) : target.settleItems(outcomes);
        }
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const fanout = createFanout({
      store: flaky,
      boss: { connectionString: db.url, max: 5 },
      definitions: [testDefinition()],
      worker: { concurrency: 10, leaseMs: 1000, controlPollMs: 250 },
      maintenance: { intervalMs: 250 },
      logger: { debug() {}, info() {}, warn() {}, error() {} },
    });
    const reported: string[] = [];
    fanout.events.on('error', ({ context }) => void reported.push(context));
    await fanout.start();
    try {
      const task = await fanout.submit('test_batch', { count: 40 });
      const done = await waitFor(async () => {
        const current = await fanout.getTask(task.id);
        return current?.status === 'completed' ? current : null;
      }, { timeoutMs: 30_000, message: 'task completed' });
      expect(done).toMatchObject({ total: 40, succeeded: 40, failed: 0, cancelled: 0 });
      await check({ taskId: task.id, reported, prisma });
    } finally {
      await fanout.stop();
      await prisma.$disconnect();
      await pool.end();
    }
  }

  const attemptsOf = (prisma: PrismaClient, taskId: string) =>
    prisma.$queryRaw<{ attempts: number; n: number }[]>`
      SELECT attempts, count(*)::int AS n FROM fanout_item WHERE task_id = ${taskId}::uuid GROUP BY 1 ORDER BY 1`;

  it('a settle that fails once is retried: nothing runs twice', async () => {
    let failures = 1;
    await withFlakySettles(() => failures-- > 0, async ({ taskId, reported, prisma }) => {
      expect(reported).toEqual([]);
      expect(await attemptsOf(prisma, taskId)).toEqual([{ attempts: 1, n: 40 }]);
    });
  });

  it('outcomes the store keeps refusing are given again by the maintenance loop and counted once', async () => {
    // Every settle holding an outcome of the first claim fails, retries and halves included: those
    // items keep their claims, their leases lapse, and the maintenance loop gives them again.
    let refused: string | undefined;
    const fails = (outcomes: Outcomes) => {
      refused ??= outcomes[0]!.token;
      return outcomes.some((o) => o.token === refused);
    };
    await withFlakySettles(fails, async ({ taskId, reported, prisma }) => {
      expect(reported.some((context) => context.startsWith('storing the outcome of item'))).toBe(true);
      const attempts = await attemptsOf(prisma, taskId);
      expect(attempts.at(-1)!.attempts).toBe(2);
      expect(attempts.reduce((sum, row) => sum + row.n, 0)).toBe(40);
    });
  });
});
