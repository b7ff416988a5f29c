import { FanoutError, PermanentError } from '@fanout/core';
import { describe, expect, it } from 'vitest';
import { finished, testApp, waitFor } from './fixtures/harness.ts';


describe('task controls', () => {
  it('cancel: pending items are counted as cancelled and running ones are aborted on every process', async () => {
    await using t = await testApp();
    const workers = await t.spawnWorkers(2, { FANOUT_CONCURRENCY: 5 });
    const task = await t.app.fanout.submit('test_batch', { count: 300, item: { sleepMs: 20_000 } });
    await waitFor(async () => {
      const [row] = await t.app.prisma.$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS n FROM fanout_item WHERE task_id = ${task.id}::uuid AND status = 'running'`;
      return row!.n >= 8;
    }, { message: 'items running on both workers' });
    const stopping = await t.app.fanout.cancel(task.id);
    expect(stopping.status).toBe('stopping');
    expect(stopping.cancelled).toBeGreaterThanOrEqual(280);

    // Handlers sleep 20 s unless aborted; the task ends long before that.
    const done = await finished(t, task.id, 15_000);
    expect(done).toMatchObject({ status: 'cancelled', stopReason: 'cancelled', total: 300, succeeded: 0, failed: 0, cancelled: 300 });
    await waitFor(() => workers.flatMap((w) => w.lines).some((l) => l === `TASK task.cancelled ${task.id}`), { message: 'cancelled event' });
    // The fan-in runs once, in a worker (the cancel came from this API-side runtime).
    await waitFor(() => workers.flatMap((w) => w.lines).some((l) => l.startsWith(`FANIN ${task.id}`)), { message: 'the fan-in' });
    expect(workers.flatMap((w) => w.lines).filter((l) => l.startsWith(`FANIN-START ${task.id}`))).toHaveLength(1);

    await expect(t.app.fanout.cancel(task.id)).rejects.toMatchObject({ code: 'conflict' });
    await expect(t.app.fanout.cancel('00000000-0000-4000-8000-000000000000')).rejects.toBeInstanceOf(FanoutError);
  });

  it('retry-failed re-runs only the failed items and corrects the counters; the fan-in runs once per round', async () => {
    const fanIns: string[] = [];
    await using t = await testApp({ work: true, onFinish: (id, round, status) => void fanIns.push(`${id} ${round} ${status}`) });
    const task = await t.app.fanout.submit('test_batch', { count: 100, every: 10, special: { permanent: true, permanentUntilRound: 2 } });
    const first = await finished(t, task.id);
    expect(first).toMatchObject({ status: 'completed', succeeded: 90, failed: 10, round: 1 });
    await waitFor(() => fanIns.length === 1, { message: 'first fan-in' });

    const retry = await t.app.fanout.retryFailed(task.id);
    expect(retry.retried).toBe(10);
    expect(retry.task).toMatchObject({ status: 'running', succeeded: 90, failed: 0, round: 2 });
    const second = await finished(t, task.id);
    expect(second).toMatchObject({ status: 'completed', total: 100, succeeded: 100, failed: 0, round: 2 });
    await waitFor(() => fanIns.length === 2, { message: 'second fan-in' });
    expect(fanIns).toEqual([`${task.id} 1 completed`, `${task.id} 2 completed`]);
    const rounds = await t.app.prisma.$queryRaw<{ round: number; n: number }[]>`
      SELECT round, count(*)::int AS n FROM fanout_item WHERE task_id = ${task.id}::uuid GROUP BY round ORDER BY round`;
    expect(rounds).toEqual([
      { round: 1, n: 90 },
      { round: 2, n: 10 },
    ]);
    await expect(t.app.fanout.retryFailed(task.id)).rejects.toMatchObject({ code: 'conflict' });
  });

  it('a retry asked for the moment a task ended waits for that ending: announced and its fan-in run, then the new round', async () => {
    const log: string[] = [];
    // Round 1's fan-in fails once, and its ending's first delivery fails (a broadcast out for a
    // moment): the maintenance loop runs the one and announces the other again a second later.
    let hookDown = true;
    await using t = await testApp({
      work: true,
      maintenance: { announceGraceMs: 1000, fanInLeaseMs: 1000 },
      onFinish: async (_id, round, status) => {
        if (round === 1 && hookDown) {
          hookDown = false;
          throw new Error('report service unreachable');
        }
        log.push(`fan-in ${round} ${status}`);
      },
    });
    const { app } = t;
    let broadcastDown = true;
    app.fanout.events.onEnding(async (type, event) => {
      if (broadcastDown) {
        broadcastDown = false;
        throw new Error('broadcast unreachable');
      }
      log.push(`ending ${event.round} ${type}`);
    });
    app.fanout.events.on('error', () => {});
    const task = await app.fanout.submit('test_batch', { count: 3, every: 2, special: { permanent: true, permanentUntilRound: 2 } });
    await finished(t, task.id);
    const retried = await app.fanout.retryFailed(task.id);
    log.push('retried');
    expect(retried).toMatchObject({ retried: 2, task: { round: 2 } });
    await finished(t, task.id);
    await waitFor(() => log.length === 5, { message: "round 2's fan-in and ending" });
    // Round 1's ending and fan-in came first (the fan-in may finish its second run as the retry goes on).
    expect(log.indexOf('ending 1 task.completed')).toBeLessThan(log.indexOf('retried'));
    expect(log.filter((l) => l.startsWith('fan-in'))).toEqual(['fan-in 1 completed', 'fan-in 2 completed']);
    expect(log.filter((l) => l.startsWith('ending'))).toEqual(['ending 1 task.completed', 'ending 2 task.completed']);
  });

  it('a fan-in that keeps failing holds a retry back for a minute after the end, no longer', async () => {
    const fanIns: string[] = [];
    await using t = await testApp({
      work: true,
      onFinish: async (_id, round, status) => {
        if (round === 1) throw new Error('report service unreachable');
        fanIns.push(`${round} ${status}`);
      },
    });
    const { app } = t;
    app.fanout.events.on('error', () => {});
    const task = await app.fanout.submit('test_batch', { count: 3, every: 2, special: { permanent: true, permanentUntilRound: 2 } });
    await finished(t, task.id);
    // As if it had ended two minutes ago, its fan-in failing ever since.
    await app.prisma.$executeRaw`UPDATE fanout_task SET completed_at = completed_at - interval '2 minutes' WHERE id = ${task.id}::uuid`;
    expect(await app.fanout.retryFailed(task.id)).toMatchObject({ retried: 2, task: { round: 2 } });
    // Round 2's fan-in does not wait out the 30 s round 1's failures were to wait before their next try.
    await waitFor(() => fanIns.length === 1, { message: "round 2's fan-in", timeoutMs: 15_000 });
    expect(fanIns).toEqual(['2 completed']);
  });

  it('a fan-in that throws a PermanentError is done for its round: not run again', async () => {
    let runs = 0;
    await using t = await testApp({
      work: true,
      onFinish: async () => {
        runs++;
        throw new PermanentError('the report it writes has nowhere to go', { code: 'no_report' });
      },
    });
    const { app } = t;
    const reported: string[] = [];
    app.fanout.events.on('error', (e) => void reported.push((e.error as Error).message));
    const task = await app.fanout.submit('test_batch', { count: 3 });
    await finished(t, task.id);
    await waitFor(async () => (await app.prisma.$queryRaw<{ done: boolean }[]>`SELECT fanin_round >= round AS done FROM fanout_task WHERE id = ${task.id}::uuid`)[0]!.done, { message: 'the round recorded' });
    // Later passes find nothing to run.
    await app.fanout.runMaintenance();
    await app.fanout.runMaintenance();
    expect(runs).toBe(1);
    expect(reported).toContain('the report it writes has nowhere to go');
  });

  it("a retried round gets the definition's deadline from the retry, unless the retry gives one (or none)", async () => {
    await using t = await testApp({ work: true, deadlineMs: 3_600_000 });
    const task = await t.app.fanout.submit('test_batch', { count: 4, every: 2, special: { permanent: true } });
    expect((await finished(t, task.id)).deadlineAt).not.toBeNull();
    const near = (at: Date | null, ms: number) => expect(Math.abs(at!.getTime() - (Date.now() + ms))).toBeLessThan(60_000);
    const first = await t.app.fanout.retryFailed(task.id);
    near(first.task.deadlineAt, 3_600_000);
    await finished(t, task.id);
    const second = await t.app.fanout.retryFailed(task.id, { deadlineMs: 600_000 });
    near(second.task.deadlineAt, 600_000);
    await finished(t, task.id);
    expect((await t.app.fanout.retryFailed(task.id, { deadlineMs: null })).task.deadlineAt).toBeNull();
  });

  it('tolerated failures: the task fails early once more items failed than it tolerates', async () => {
    await using t = await testApp();
    await t.spawnWorkers(1, { FANOUT_CONCURRENCY: 4 });
    const task = await t.app.fanout.submit('test_batch', { count: 400, item: { permanent: true, sleepMs: 10 } }, { maxFailures: 10 });
    const done = await finished(t, task.id);
    expect(done).toMatchObject({ status: 'failed', stopReason: 'failure_threshold', total: 400 });
    expect(done.failed).toBeGreaterThan(10);
    expect(done.cancelled).toBeGreaterThan(300);
    expect(done.succeeded + done.failed + done.cancelled).toBe(400);

    const ratio = await t.app.fanout.submit('test_batch', { count: 50, every: 2, special: { permanent: true } }, { maxFailureRatio: 0.6 });
    expect(await finished(t, ratio.id)).toMatchObject({ status: 'completed', failed: 25, succeeded: 25 });
  });

  it('a deadline fails the whole task and cancels what is left', async () => {
    await using t = await testApp();
    await t.spawnWorkers(1, { FANOUT_CONCURRENCY: 4 });
    const task = await t.app.fanout.submit('test_batch', { count: 60, item: { sleepMs: 20_000 } }, { deadlineMs: 1500 });
    const done = await finished(t, task.id, 15_000);
    expect(done).toMatchObject({ status: 'failed', stopReason: 'deadline', total: 60, succeeded: 0, failed: 0, cancelled: 60 });
  });

  it('rejects bad submissions with the field and the rule, storing nothing', async () => {
    await using t = await testApp();
    await expect(t.app.fanout.submit('test_batch', { count: -1 } as never)).rejects.toMatchObject({ name: 'ZodError' });
    await expect(t.app.fanout.submit('test_batch', { count: 1 }, { maxFailureRatio: 2 })).rejects.toMatchObject({
      code: 'invalid_argument',
      field: 'maxFailureRatio',
    });
    await expect(t.app.fanout.submit('nope', {})).rejects.toMatchObject({ code: 'unknown_definition' });
    expect((await t.app.fanout.listTasks({ limit: 10 })).rows).toHaveLength(0);
  });

  it('reconcile repairs drifted counters from the item rows and finishes a task they left stuck', async () => {
    await using t = await testApp({ work: true });
    const completed: string[] = [];
    t.app.fanout.events.on('task.completed', (e) => void completed.push(e.id));
    const task = await t.app.fanout.submit('test_batch', { count: 30 });
    await finished(t, task.id);
    // A manual edit (or a bug) leaves the task running with counters that lost ten items.
    await t.app.prisma.$executeRaw`
      UPDATE fanout_task SET status = 'running', completed_at = NULL, succeeded = 20 WHERE id = ${task.id}::uuid`;
    const result = await t.app.fanout.reconcile(task.id);
    expect(result.drift).toEqual([{ field: 'succeeded', was: 20, now: 30 }]);
    expect(result.finished).toBe(true);
    expect(await t.app.fanout.getTask(task.id)).toMatchObject({ status: 'completed', succeeded: 30, total: 30 });
    expect(completed.filter((id) => id === task.id)).toHaveLength(2); // once by its last child, once by the repair
    await expect(t.app.fanout.reconcile('00000000-0000-4000-8000-000000000000')).rejects.toMatchObject({ code: 'not_found' });
  });

  it('reconcile applies the failure tolerance to the counters it sets right, as a settle would', async () => {
    await using t = await testApp({ work: true });
    const items = (taskId: string) => t.app.prisma.$queryRaw<{ id: string }[]>`SELECT id::text FROM fanout_item WHERE task_id = ${taskId}::uuid ORDER BY id`;
    // Every item settled: counters that missed a failure past `maxFailures: 0` end the task failed.
    const whole = await t.app.fanout.submit('test_batch', { count: 3 }, { maxFailures: 0 });
    await finished(t, whole.id);
    const [a] = await items(whole.id);
    await t.app.prisma.$executeRaw`UPDATE fanout_item SET status = 'failed', error = '{"code":"lost","message":"a failure the counters missed"}' WHERE id = ${a!.id}::uuid`;
    await t.app.prisma.$executeRaw`UPDATE fanout_task SET status = 'running', completed_at = NULL WHERE id = ${whole.id}::uuid`;
    const repaired = await t.app.fanout.reconcile(whole.id);
    expect(repaired).toMatchObject({ finished: true, drift: [{ field: 'succeeded', was: 3, now: 2 }, { field: 'failed', was: 0, now: 1 }] });
    expect(await t.app.fanout.getTask(whole.id)).toMatchObject({ status: 'failed', stopReason: 'failure_threshold', succeeded: 2, failed: 1 });

    // An item still pending: the task is stopped, the pending item cancelled and counted.
    const part = await t.app.fanout.submit('test_batch', { count: 3 }, { maxFailures: 0 });
    await finished(t, part.id);
    const [b, c] = await items(part.id);
    await t.app.prisma.$executeRaw`UPDATE fanout_item SET status = 'failed', error = '{"code":"lost","message":"a failure the counters missed"}' WHERE id = ${b!.id}::uuid`;
    await t.app.prisma.$executeRaw`UPDATE fanout_item SET status = 'pending', result = NULL WHERE id = ${c!.id}::uuid`;
    await t.app.prisma.$executeRaw`UPDATE fanout_task SET status = 'running', completed_at = NULL WHERE id = ${part.id}::uuid`;
    const stopped = await t.app.fanout.reconcile(part.id);
    expect(stopped.finished).toBe(true);
    expect(await t.app.fanout.getTask(part.id)).toMatchObject({ status: 'failed', stopReason: 'failure_threshold', error: 'more items failed than the task tolerates', succeeded: 1, failed: 1, cancelled: 1 });
  });
});
