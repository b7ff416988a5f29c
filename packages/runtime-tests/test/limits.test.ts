import { describe, expect, it } from 'vitest';
import { fakeApi } from './fixtures/fake-http.ts';
import { testApp, waitFor } from './fixtures/harness.ts';

describe('global limits across processes', () => {
  it('a global limit of 3 across 3 worker processes is never exceeded', async () => {
    await using api = await fakeApi(() => ({ status: 200, delayMs: 25 }));
    await using t = await testApp();
    await t.spawnWorkers(3, { FANOUT_CONCURRENCY: 10 });
    const task = await t.app.fanout.submit('test_batch', { count: 150, item: { httpUrl: api.url, limitName: 'test_llm', limit: 3 } });
    const done = await waitFor(async () => {
      const current = await t.app.fanout.getTask(task.id);
      return current?.status === 'completed' ? current : null;
    }, { timeoutMs: 60_000, message: 'task completed' });
    expect(done).toMatchObject({ succeeded: 150, failed: 0 });
    expect(api.requests).toHaveLength(150);
    expect(api.maxInFlight).toBeLessThanOrEqual(3);
    // Strict, and not stricter than asked: with 30 handlers waiting, the limit was reached.
    expect(api.maxInFlight).toBe(3);
    // The calls came from every process.
    const pids = await t.app.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(DISTINCT result->>'pid')::int AS n FROM fanout_item WHERE task_id = ${task.id}::uuid`;
    expect(pids[0]!.n).toBe(3);
    expect(await t.app.fanout.globalLimit('test_llm', { limit: 3 }).holders()).toBe(0);
  });

  it('a rate limit holds across processes: never more than 10 calls in any 1-second window', async () => {
    await using api = await fakeApi(() => ({ status: 200 }));
    await using t = await testApp();
    await t.spawnWorkers(3, { FANOUT_CONCURRENCY: 10 });
    const task = await t.app.fanout.submit('test_batch', {
      count: 35,
      item: { httpUrl: api.url, rateName: 'test_rpm', ratePerInterval: 10, rateIntervalMs: 1000 },
    });
    await waitFor(async () => (await t.app.fanout.getTask(task.id))?.status === 'completed', { timeoutMs: 60_000, message: 'task completed' });
    expect(api.requests).toHaveLength(35);
    // The moments the slots were taken, by the database clock that enforces them.
    const rows = await t.app.prisma.$queryRaw<{ at: number }[]>`
      SELECT (result->>'rateTakenAt')::float8 AS at FROM fanout_item WHERE task_id = ${task.id}::uuid`;
    const times = rows.map((r) => r.at).sort((a, b) => a - b);
    expect(times).toHaveLength(35);
    // Any 11 consecutive takes span at least the interval (timestamps are kept to the millisecond).
    for (let i = 10; i < times.length; i++) expect(times[i]! - times[i - 10]!).toBeGreaterThanOrEqual(999);
    expect(times.at(-1)! - times[0]!).toBeGreaterThanOrEqual(2997);
    // And as the called server saw them arrive. A request reaches it some time after its take (the
    // worker's event loop, loopback): under a heavy load, up to half a second, so one window seen
    // there can be that much shorter. Over 2 and 3 intervals that noise is small against what a
    // broken limit would show: kept per process instead of across the three, 21 calls would
    // arrive within about 0.7 s and all 35 within about 1.1 s; with no limit, within a few ms.
    const arrivals = api.requests.map((r) => r.at).sort((a, b) => a - b);
    for (let i = 20; i < arrivals.length; i++) expect(arrivals[i]! - arrivals[i - 20]!).toBeGreaterThanOrEqual(1200);
    expect(arrivals.at(-1)! - arrivals[0]!).toBeGreaterThanOrEqual(2000);
  });

  it('a worker process never runs more handlers at once than its concurrency', async () => {
    await using api = await fakeApi(() => ({ status: 200, delayMs: 20 }));
    await using t = await testApp();
    await t.spawnWorkers(1, { FANOUT_CONCURRENCY: 4 });
    const task = await t.app.fanout.submit('test_batch', { count: 60, item: { httpUrl: api.url } });
    await waitFor(async () => (await t.app.fanout.getTask(task.id))?.status === 'completed', { message: 'task completed' });
    expect(api.requests).toHaveLength(60);
    expect(api.maxInFlight).toBe(4);
  });
});
