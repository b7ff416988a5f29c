import { describe, expect, it } from 'vitest';
import { fakeApi } from './fixtures/fake-http.ts';
import { finished, testApp, waitFor } from './fixtures/harness.ts';


describe('delivery and retries', () => {
  // Jobs of the child queue take items by claiming them; duplicate jobs (pg-boss delivers at least
  // once) are extra takers, never a second run of an item.
  const duplicates = (n: number, from = 100) =>
    Array.from({ length: n }, (_, i) => ({ data: { tenant: null, slot: from + i }, singletonKey: `dup${from + i}:` }));
  const unconsumed = async (t: Awaited<ReturnType<typeof testApp>>) => {
    const [row] = await t.app.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'test_batch_items' AND state IN ('created', 'retry', 'active')`;
    return row!.n;
  };

  it('duplicate jobs of the child queue run no item twice, during the task and after it', async () => {
    await using t = await testApp();
    await t.spawnWorkers(2, { FANOUT_CONCURRENCY: 10 });
    const task = await t.app.fanout.submit('test_batch', { count: 400, item: { sleepMs: 10 } });
    await waitFor(async () => (await t.app.fanout.getTask(task.id))?.dispatchedAt, { message: 'dispatch done' });

    // Forty more takers while the items are being worked.
    await t.app.fanout.boss.insert('test_batch_items', duplicates(40));
    const done = await finished(t, task.id);
    expect(done).toMatchObject({ status: 'completed', total: 400, succeeded: 400, failed: 0 });
    await waitFor(async () => (await unconsumed(t)) === 0, { message: 'all jobs consumed' });
    const [attempts] = await t.app.prisma.$queryRaw<{ max: number; sum: number }[]>`
      SELECT max(attempts) AS max, sum(attempts)::int AS sum FROM fanout_item WHERE task_id = ${task.id}::uuid`;
    expect(attempts).toEqual({ max: 1, sum: 400 });
    expect(await t.app.fanout.getTask(task.id)).toMatchObject({ succeeded: 400, failed: 0, cancelled: 0 });

    // Jobs after the task finished find nothing to take.
    await t.app.fanout.boss.insert('test_batch_items', duplicates(5, 200));
    await waitFor(async () => (await unconsumed(t)) === 0, { message: 'late jobs consumed' });
    expect(await t.app.fanout.getTask(task.id)).toMatchObject({ status: 'completed', succeeded: 400 });
    const [again] = await t.app.prisma.$queryRaw<{ sum: number }[]>`SELECT sum(attempts)::int AS sum FROM fanout_item WHERE task_id = ${task.id}::uuid`;
    expect(again!.sum).toBe(400);
  });

  it('jobs that arrive while every item runs take nothing: each item runs once', async () => {
    await using t = await testApp();
    const workers = await t.spawnWorkers(2, { FANOUT_CONCURRENCY: 10 });
    // Items long enough that the extra jobs are all taken while they run, on a loaded machine too.
    const task = await t.app.fanout.submit('test_batch', { count: 10, item: { sleepMs: 5000 } });
    await waitFor(async () => (await t.app.fanout.store.itemCounts(task.id)).running === 10, { message: 'every item running' });
    await t.app.fanout.boss.insert('test_batch_items', duplicates(10));
    expect(await finished(t, task.id)).toMatchObject({ status: 'completed', succeeded: 10, failed: 0 });
    // The extra jobs were taken while the items ran.
    const [overlap] = await t.app.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pgboss.job j
      WHERE j.name = 'test_batch_items' AND j.singleton_key LIKE 'dup%'
        AND j.started_on < (SELECT min(finished_at) FROM fanout_item WHERE task_id = ${task.id}::uuid)`;
    expect(overlap!.n).toBe(10);
    const [attempts] = await t.app.prisma.$queryRaw<{ max: number; sum: number }[]>`
      SELECT max(attempts) AS max, sum(attempts)::int AS sum FROM fanout_item WHERE task_id = ${task.id}::uuid`;
    expect(attempts).toEqual({ max: 1, sum: 10 });
    await Promise.all(workers.map((w) => w.stop()));
    // Each item's handler ran once, in one process or the other.
    expect(workers.map((w) => Number(/items=(\d+)/.exec(w.lines.find((l) => l.startsWith('STOPPED')) ?? '')?.[1] ?? -1)).reduce((a, b) => a + b, 0)).toBe(10);
  });

  it('retries transient errors, counts exhausted ones as failed, and records permanent ones at once', async () => {
    await using t = await testApp({ work: true });
    const task = await t.app.fanout.submit('test_batch', {
      count: 30,
      item: { transientFailures: 1 }, // every item fails once, then succeeds
      every: 5,
      special: { transientFailures: 9 }, // n % 5 == 0: never succeeds within 3 attempts
    });
    const permanent = await t.app.fanout.submit('test_batch', { count: 8, every: 4, special: { permanent: true } });
    const done = await finished(t, task.id);
    expect(done).toMatchObject({ status: 'completed', total: 30, succeeded: 24, failed: 6 });
    const rows = await t.app.prisma.$queryRaw<{ status: string; attempts: number; code: string; n: number }[]>`
      SELECT status, attempts, error->>'code' AS code, count(*)::int AS n FROM fanout_item WHERE task_id = ${task.id}::uuid
      GROUP BY 1, 2, 3 ORDER BY 1`;
    expect(rows).toEqual([
      { status: 'failed', attempts: 3, code: 'transient', n: 6 },
      { status: 'succeeded', attempts: 2, code: 'transient', n: 24 },
    ]);

    const p = await finished(t, permanent.id);
    expect(p).toMatchObject({ status: 'completed', succeeded: 6, failed: 2 });
    const failedItems = await t.app.fanout.listItems(permanent.id, { status: 'failed', limit: 10 });
    expect(failedItems.rows.map((i) => [i.attempts, i.error?.code, i.error?.message])).toEqual([
      [1, 'corrupt', 'corrupt input'],
      [1, 'corrupt', 'corrupt input'],
    ]);
  });

  it('a result that cannot be stored as JSON fails its item alone, with a reason', async () => {
    await using t = await testApp({ work: true });
    const task = await t.app.fanout.submit('test_batch', { count: 12, every: 4, special: { badResult: 'nul' } });
    const big = await t.app.fanout.submit('test_batch', { count: 3, every: 3, special: { badResult: 'bigint' } });
    expect(await finished(t, task.id)).toMatchObject({ status: 'completed', succeeded: 9, failed: 3 });
    expect(await finished(t, big.id)).toMatchObject({ status: 'completed', succeeded: 2, failed: 1 });
    const failed = await t.app.fanout.listItems(task.id, { status: 'failed', limit: 10 });
    expect(failed.rows.map((i) => [i.attempts, i.error?.code])).toEqual([[1, 'invalid_result'], [1, 'invalid_result'], [1, 'invalid_result']]);
    expect(failed.rows[0]!.error?.message).toContain('NUL');
    const bigFailed = await t.app.fanout.listItems(big.id, { status: 'failed', limit: 10 });
    expect(bigFailed.rows[0]!.error?.message).toMatch(/BigInt/);
    // Half a character in a result (jsonb refuses it): the item fails at once, not at every settle until it lapses.
    const halfResult = await t.app.fanout.submit('test_batch', { count: 2, every: 2, special: { badResult: 'half' } });
    expect(await finished(t, halfResult.id)).toMatchObject({ status: 'completed', succeeded: 1, failed: 1 });
    const halfFailed = (await t.app.fanout.listItems(halfResult.id, { status: 'failed', limit: 10 })).rows;
    expect(halfFailed.map((i) => [i.attempts, i.error?.code])).toEqual([[1, 'invalid_result']]);
    expect(halfFailed[0]!.error?.message).toContain('surrogate');
    // An error holding half a character (a message cut inside an emoji) is stored, the half as U+FFFD.
    const half = await t.app.fanout.submit('test_batch', { count: 2, item: { halfCharacterError: true } });
    expect(await finished(t, half.id)).toMatchObject({ status: 'completed', succeeded: 0, failed: 2 });
    const halves = await t.app.fanout.listItems(half.id, { status: 'failed', limit: 10 });
    expect(halves.rows.map((i) => [i.attempts, i.error?.code, i.error?.message])).toEqual(Array(2).fill([1, 'half\uFFFD', 'cut inside an emoji: 😀\uFFFD']));
    // A backslash followed by "u0000" in a text is not a NUL: stored as it is.
    const escaped = await t.app.fanout.submit('test_batch', { count: 2, item: { badResult: 'escaped' } });
    expect(await finished(t, escaped.id)).toMatchObject({ status: 'completed', succeeded: 2, failed: 0 });
    const stored = await t.app.fanout.listItems(escaped.id, { limit: 10 });
    expect(stored.rows.map((i) => (i.result as { text: string }).text)).toEqual(['\\u0000 is a backslash and five letters', '\\u0000 is a backslash and five letters']);
  });

  it('honours Retry-After on 429 and retries 5xx from a real HTTP server', async () => {
    await using api = await fakeApi(({ n, attempt }) =>
      attempt === 1 ? (n % 2 === 0 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 503 }) : { status: 200 },
    );
    await using t = await testApp({ work: true });
    const task = await t.app.fanout.submit('test_batch', { count: 6, item: { httpUrl: api.url } });
    expect(await finished(t, task.id)).toMatchObject({ status: 'completed', succeeded: 6, failed: 0 });
    for (let n = 0; n < 6; n++) {
      const [first, second] = api.requests.filter((r) => r.n === n).sort((a, b) => a.attempt - b.attempt);
      expect(first?.attempt).toBe(1);
      expect(second?.attempt).toBe(2);
      if (n % 2 === 0) expect(second!.at - first!.at).toBeGreaterThanOrEqual(1000);
    }
    const codes = await t.app.prisma.$queryRaw<{ code: string; n: number }[]>`
      SELECT error->>'code' AS code, count(*)::int AS n FROM fanout_item WHERE task_id = ${task.id}::uuid GROUP BY 1 ORDER BY 1`;
    expect(codes).toEqual([
      { code: 'http_429', n: 3 },
      { code: 'http_503', n: 3 },
    ]);
  });

  it('a job that outlives its expiry is aborted and, on its last attempt, counted as failed', async () => {
    await using t = await testApp({ work: true, childExpireInSeconds: 1, childRetryLimit: 1 });
    const task = await t.app.fanout.submit('test_batch', { count: 3, every: 2, special: { sleepMs: 60_000 } });
    const done = await finished(t, task.id, 30_000);
    expect(done).toMatchObject({ status: 'completed', succeeded: 1, failed: 2 });
    const failed = await t.app.fanout.listItems(task.id, { status: 'failed', limit: 10 });
    expect(failed.rows.map((i) => [i.attempts, i.error?.code])).toEqual([
      [2, 'expired'],
      [2, 'expired'],
    ]);
  });

  it("an attempt's expiry starts with its handler: an item claimed ahead does not spend it waiting", async () => {
    await using t = await testApp();
    // One handler and an item claimed ahead of it: each item waits about 2 s for the one before,
    // then runs 2 s, under a 3 s expiry (counted from the claim, every item but the first expired).
    await t.spawnWorkers(1, { FANOUT_CONCURRENCY: 1, FANOUT_CHILD_EXPIRE_IN_SECONDS: 3 });
    const task = await t.app.fanout.submit('test_batch', { count: 3, item: { sleepMs: 2000 } });
    expect(await finished(t, task.id)).toMatchObject({ status: 'completed', succeeded: 3, failed: 0 });
    const [attempts] = await t.app.prisma.$queryRaw<{ max: number }[]>`SELECT max(attempts) AS max FROM fanout_item WHERE task_id = ${task.id}::uuid`;
    expect(attempts!.max).toBe(1);
  });

  describe('a handler that ignores its signal is not waited for past a short grace', () => {
    // `stubbornMs`: the handler waits ten minutes and never reads its signal, as a call without a
    // timeout does. Waited for, its item stayed running under a renewed lease and its task never ended.
    const stubborn = { stubbornMs: 600_000 };
    const running = (t: Awaited<ReturnType<typeof testApp>>, taskId: string) =>
      waitFor(async () => (await t.app.fanout.listItems(taskId, { status: 'running', limit: 1 })).rows.length === 1, { message: 'the item running' });

    it('an expired attempt counts as failed, and the task completes', async () => {
      await using t = await testApp({ work: true, childExpireInSeconds: 1, childRetryLimit: 1 });
      const task = await t.app.fanout.submit('test_batch', { count: 2, every: 2, special: stubborn });
      const done = await finished(t, task.id, 30_000);
      expect(done).toMatchObject({ status: 'completed', succeeded: 1, failed: 1 });
      const failed = await t.app.fanout.listItems(task.id, { status: 'failed', limit: 10 });
      expect(failed.rows.map((i) => [i.attempts, i.error?.code])).toEqual([[2, 'expired']]);
    });

    it('an item waiting behind it for a handler expires after an attempt and its grace, so its attempts end the wait', async () => {
      await using t = await testApp({ childRetryLimit: 1 });
      // The one handler never comes free: the other item, claimed ahead, would wait under a renewed
      // lease for ever (and, given back, be claimed again to wait again).
      await t.spawnWorkers(1, { FANOUT_CONCURRENCY: 1, FANOUT_CHILD_EXPIRE_IN_SECONDS: 1, FANOUT_CHILD_RETRY_LIMIT: 1 });
      const task = await t.app.fanout.submit('test_batch', { count: 2, every: 2, special: stubborn });
      expect(await finished(t, task.id, 30_000)).toMatchObject({ status: 'completed', succeeded: 0, failed: 2 });
      const failed = await t.app.fanout.listItems(task.id, { status: 'failed', limit: 10 });
      const waited = failed.rows.find((i) => i.key === 'item-1');
      expect(waited).toMatchObject({ attempts: 2, error: { code: 'expired' } });
      expect(waited!.error?.message).toMatch(/expired waiting for a free handler: none of its process.s handlers came free for 5s/);
    });

    it('a cancelled task ends, its item cancelled', async () => {
      await using t = await testApp({ work: true });
      const task = await t.app.fanout.submit('test_batch', { count: 1, item: stubborn });
      await running(t, task.id);
      await t.app.fanout.cancel(task.id);
      expect(await finished(t, task.id, 20_000)).toMatchObject({ status: 'cancelled', cancelled: 1, succeeded: 0, failed: 0 });
    });

    it("a stop returns after its grace, and the item is given back without using up its attempt", async () => {
      await using t = await testApp({ work: true });
      const task = await t.app.fanout.submit('test_batch', { count: 1, item: stubborn });
      await running(t, task.id);
      let timer: NodeJS.Timeout | undefined;
      const stopped = await Promise.race([
        t.app.fanout.stop({ graceMs: 200 }).then(() => 'stopped'),
        new Promise((resolve) => (timer = setTimeout(resolve, 20_000, 'still stopping'))),
      ]);
      clearTimeout(timer);
      expect(stopped).toBe('stopped');
      // Given back by this process (its maintenance loop stopped with it, nothing else would).
      const [item] = (await t.app.fanout.listItems(task.id, { limit: 1 })).rows;
      expect(item).toMatchObject({ status: 'pending', attempts: 0 });
    });
  });

  it('a listener that throws never breaks the worker', async () => {
    await using t = await testApp({ work: true });
    const reported: string[] = [];
    t.app.fanout.events.on('item.succeeded', () => {
      throw new Error('listener bug');
    });
    t.app.fanout.events.on('task.completed', async () => {
      throw new Error('async listener bug');
    });
    t.app.fanout.events.on('error', (e) => {
      reported.push(`${e.context}: ${(e.error as Error).message}`);
    });
    const task = await t.app.fanout.submit('test_batch', { count: 20 });
    expect(await finished(t, task.id)).toMatchObject({ status: 'completed', succeeded: 20 });
    await waitFor(() => reported.includes('listener of task.completed: async listener bug'), { message: 'reported' });
    expect(reported.filter((r) => r === 'listener of item.succeeded: listener bug')).toHaveLength(20);
  });
});
