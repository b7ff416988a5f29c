import { collectEventStream } from '@fanout/sse-pg';
import { describe, expect, it } from 'vitest';
import { fakeApi } from './fixtures/fake-http.ts';
import { finished, testApp, waitFor, type TestApp } from './fixtures/harness.ts';

// Promises the README makes that a crash, a stall or a failed broadcast could break: the fan-in
// runs once per round, an ending is announced even when its broadcast failed, a rolling deploy
// uses up no attempt, a retry after a stop runs what the stop left, hostile values fail one item.
const DEAD_DATABASE = 'postgres://postgres:postgres@127.0.0.1:1/nowhere';

const lines = (t: TestApp, prefix: string) => t.workers.flatMap((w) => w.lines).filter((l) => l.startsWith(prefix));

describe('promises kept', () => {
  it('the fan-in runs once even when it outlives its lease: the lease is renewed while it runs', async () => {
    await using t = await testApp();
    await t.spawnWorkers(2, { FANOUT_FANIN_LEASE_MS: 1000, FANOUT_FANIN_SLEEP_MS: 3500, FANOUT_MAINTENANCE_MS: 200 });
    const task = await t.app.fanout.submit('test_batch', { count: 4 });
    await finished(t, task.id);
    await waitFor(async () => {
      const [row] = await t.app.prisma.$queryRaw<{ fanin_round: number }[]>`SELECT fanin_round FROM fanout_task WHERE id = ${task.id}::uuid`;
      // Every run that started has ended, and the round is recorded.
      return row!.fanin_round === 1 && lines(t, `FANIN-START ${task.id}`).length === lines(t, `FANIN ${task.id}`).length;
    }, { timeoutMs: 20_000, message: 'the fan-in done' });
    expect(lines(t, `FANIN-START ${task.id}`)).toHaveLength(1);
    expect(lines(t, `FANIN ${task.id}`)).toEqual([`FANIN ${task.id} 1 completed`]);
  });

  it('an ending whose broadcast failed is announced again by another process, and reaches a live stream', async () => {
    await using t = await testApp();
    const api = await t.spawnApi('a');
    // The worker that runs the items cannot broadcast; the other one only runs the maintenance loop.
    const [mute] = await t.spawnWorkers(1, { FANOUT_PUBLISHER_URL: DEAD_DATABASE, FANOUT_ANNOUNCE_GRACE_MS: 600_000 });
    const [keeper] = await t.spawnWorkers(1, { FANOUT_CHILDREN: 0, FANOUT_ANNOUNCE_GRACE_MS: 500 });
    const task = await t.app.fanout.submit('test_batch', { count: 5 }, { tenant: 'x' });
    const res = await fetch(`http://127.0.0.1:${api.port}/tasks/${task.id}/events`, { headers: { 'x-tenant': 'x' } });
    const sse = collectEventStream(res.body!);
    await finished(t, task.id);
    await waitFor(() => mute!.lines.includes(`TASK task.completed ${task.id}`), { message: 'the ending in the process that finished it' });
    await waitFor(() => keeper!.lines.includes(`TASK task.completed ${task.id}`), { timeoutMs: 20_000, message: 'the ending announced again' });
    await waitFor(() => sse.messages.some((m) => m.event === 'task.completed'), { timeoutMs: 20_000, message: 'the ending on the stream' });
    expect(sse.messages.filter((m) => m.event === 'task.completed')).toHaveLength(1);
    // Recorded once the broadcast took it (just after the stream may have shown it).
    await waitFor(
      async () => {
        const [row] = await t.app.prisma.$queryRaw<{ announced_round: number }[]>`SELECT announced_round FROM fanout_task WHERE id = ${task.id}::uuid`;
        return row!.announced_round === 1;
      },
      { message: 'the announcement recorded' },
    );
  });

  it('a live stream gets an ending that nobody broadcast (its process could not), before any announcement', async () => {
    await using t = await testApp();
    const api = await t.spawnApi('a');
    await t.spawnWorkers(1, { FANOUT_PUBLISHER_URL: DEAD_DATABASE, FANOUT_ANNOUNCE_GRACE_MS: 600_000 });
    const task = await t.app.fanout.submit('test_batch', { count: 3, item: { sleepMs: 500 } }, { tenant: 'x' });
    const res = await fetch(`http://127.0.0.1:${api.port}/tasks/${task.id}/events`, { headers: { 'x-tenant': 'x' } });
    const sse = collectEventStream(res.body!);
    await finished(t, task.id);
    // The stream reads its task again with each heartbeat (1 s here).
    await waitFor(() => sse.messages.some((m) => m.event === 'task.completed'), { timeoutMs: 10_000, message: 'the ending on the stream' });
    await waitFor(() => sse.ended, { message: 'the stream ends with the ending' });
  });

  it('a worker stopped gracefully gives its running items back without using up their attempt', async () => {
    await using t = await testApp({ childRetryLimit: 0 }); // one attempt per item
    const [first] = await t.spawnWorkers(1, { FANOUT_CHILD_RETRY_LIMIT: 0, FANOUT_GRACE_MS: 300 });
    const task = await t.app.fanout.submit('test_batch', { count: 3, item: { sleepMs: 4000 } });
    await waitFor(async () => (await t.app.fanout.store.itemCounts(task.id)).running === 3, { message: 'three items running' });
    first!.kill('SIGTERM');
    expect(await first!.exited).toBe(0);
    const counts = await t.app.fanout.store.itemCounts(task.id);
    expect(counts).toMatchObject({ queued: 3, running: 0, failed: 0 }); // back, attempt refunded
    await t.spawnWorkers(1, { FANOUT_CHILD_RETRY_LIMIT: 0 });
    expect(await finished(t, task.id)).toMatchObject({ status: 'completed', succeeded: 3, failed: 0 });
    const items = await t.app.fanout.listItems(task.id, { limit: 10 });
    expect(items.rows.map((i) => i.attempts)).toEqual([1, 1, 1]);
  });

  it('retry-failed after a stop by the failure tolerance also runs the items the stop cancelled; a failed dispatch cannot be retried', async () => {
    await using t = await testApp({ work: true });
    const task = await t.app.fanout.submit(
      'test_batch',
      // Enough items that some are still waiting in the table when the tolerance stops the task
      // (a worker holds about 25 ms of work beyond its handlers: 17 items of 30 ms for 20 handlers).
      { count: 100, item: { sleepMs: 30 }, every: 2, special: { permanent: true, permanentUntilRound: 2 } },
      { maxFailures: 3 },
    );
    const stopped = await finished(t, task.id);
    expect(stopped).toMatchObject({ status: 'failed', stopReason: 'failure_threshold' });
    expect(stopped.cancelled).toBeGreaterThan(0);
    const retry = await t.app.fanout.retryFailed(task.id);
    expect(retry.retried).toBe(stopped.failed + stopped.cancelled);
    expect(retry.task).toMatchObject({ status: 'running', round: 2, failed: 0, cancelled: 0, roundSettledAtStart: stopped.succeeded });
    // Round 2: nothing fails any more, and every item has run.
    expect(await finished(t, task.id)).toMatchObject({ status: 'completed', succeeded: 100, failed: 0, cancelled: 0, round: 2 });

    const broken = await t.app.fanout.submit('test_batch', { count: 20, managerFailAfter: 5 });
    expect(await finished(t, broken.id)).toMatchObject({ status: 'failed', stopReason: 'manager_failed' });
    await expect(t.app.fanout.retryFailed(broken.id)).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('submit it again') });
  });

  it('a Retry-After past a day, or past the task deadline, fails the item at once with the reason', async () => {
    await using api = await fakeApi(() => ({ status: 429, headers: { 'retry-after': '100000000' } }));
    await using t = await testApp({ work: true });
    const far = await t.app.fanout.submit('test_batch', { count: 2, item: { httpUrl: api.url } });
    const ended = await finished(t, far.id, 20_000);
    expect(ended).toMatchObject({ status: 'completed', failed: 2 });
    const items = await t.app.fanout.listItems(far.id, { limit: 10 });
    expect(items.rows.map((i) => [i.attempts, i.error?.code, i.error?.retryable])).toEqual([
      [1, 'http_429', true],
      [1, 'http_429', true],
    ]);
    expect(items.rows[0]!.error!.message).toContain('more than a day away');
  });

  it('a value PostgreSQL cannot store fails its own item (a snapshot) or the submit (an input), never the dispatch', async () => {
    await using t = await testApp({ work: true });
    await expect(t.app.fanout.submit('test_batch', { count: 1, item: { limitName: 'a\u0000b' } })).rejects.toMatchObject({ code: 'invalid_argument', field: 'input' });
    // Half a character (jsonb refuses it): a clear refusal, not PostgreSQL's "invalid input syntax for type json".
    await expect(t.app.fanout.submit('test_batch', { count: 1, item: { limitName: 'a\ud800b' } })).rejects.toMatchObject({ code: 'invalid_argument', field: 'input', message: expect.stringContaining('surrogate') });
    const task = await t.app.fanout.submit('test_batch', { count: 6, nulAt: 3 });
    expect(await finished(t, task.id)).toMatchObject({ status: 'completed', total: 6, succeeded: 5, failed: 1 });
    const [bad] = (await t.app.fanout.listItems(task.id, { status: 'failed', limit: 5 })).rows;
    expect(bad).toMatchObject({ key: 'item-3', snapshot: null, error: { code: 'invalid_snapshot', retryable: false } });
  });

  it('failures found at dispatch stop a task past maxFailures at once, the listing stops with it, and the task cannot be retried', async () => {
    await using t = await testApp();
    const [worker] = await t.spawnWorkers(1);
    const task = await t.app.fanout.submit('test_batch', { count: 5000, badSnapshotEvery: 1, listDelayMs: 2 }, { maxFailures: 5 });
    const ended = await finished(t, task.id, 30_000);
    expect(ended).toMatchObject({ status: 'failed', stopReason: 'failure_threshold' });
    // One page of 500 went in, and the listing was stopped long before its 5,000 items.
    expect(ended.total).toBeLessThan(5000);
    await waitFor(() => worker!.lines.includes(`LISTING-STOPPED ${task.id}`), { message: 'the listing stopped' });
    // Its items were never all listed: a retry would end it "completed" without them.
    await expect(t.app.fanout.retryFailed(task.id)).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('before all its items were listed (stopped by its failure tolerance)') });
  });

  it('cancelling a task stops its manager’s listing', async () => {
    await using t = await testApp();
    const [worker] = await t.spawnWorkers(1);
    // A listing of 1,000 items taking a second each: it only ends early when its signal aborts.
    const task = await t.app.fanout.submit('test_batch', { count: 1000, listDelayMs: 1000 });
    await waitFor(async () => (await t.app.fanout.getTask(task.id))?.status === 'running', { message: 'dispatching' });
    await t.app.fanout.cancel(task.id);
    await waitFor(() => worker!.lines.includes(`LISTING-STOPPED ${task.id}`), { timeoutMs: 10_000, message: 'the listing stopped' });
    expect(await finished(t, task.id)).toMatchObject({ status: 'cancelled', total: 0 });
  });

  it('a killed holder of a global-limit slot holds up the others no longer than the slot lease', async () => {
    let calls = 0;
    await using api = await fakeApi(() => ({ status: 200, delayMs: ++calls === 1 ? 60_000 : 10 }));
    await using t = await testApp();
    const [holder] = await t.spawnWorkers(1, { FANOUT_LIMIT_LEASE_MS: 1500 });
    const task = await t.app.fanout.submit('test_batch', { count: 3, item: { httpUrl: api.url, limitName: 'one_at_a_time', limit: 1 } });
    await waitFor(() => api.requests.length === 1, { message: 'the first call holding the slot' });
    await t.spawnWorkers(1, { FANOUT_LIMIT_LEASE_MS: 1500, FANOUT_LEASE_MS: 3000 });
    holder!.kill('SIGKILL');
    const killedAt = Date.now();
    // The slot frees when its lease lapses (1.5 s after the last renewal), not after 30 s.
    await waitFor(() => api.requests.length >= 2, { timeoutMs: 6000, message: 'the slot taken again' });
    console.log(`slot free ${api.requests[1]!.at - killedAt} ms after its holder was killed (lease 1500 ms)`);
    expect(await finished(t, task.id)).toMatchObject({ status: 'completed', succeeded: 3 });
  });

  it('an API process that cancels a task leaves its fan-in to the processes that run jobs', async () => {
    const local: string[] = [];
    await using t = await testApp({ onFinish: (id) => void local.push(id) });
    const task = await t.app.fanout.submit('test_batch', { count: 3 });
    await t.app.fanout.cancel(task.id); // queued: it ends at once, here
    expect((await t.app.fanout.getTask(task.id))?.status).toBe('cancelled');
    const [worker] = await t.spawnWorkers(1);
    await waitFor(() => worker!.lines.includes(`FANIN ${task.id} 1 cancelled`), { message: 'the fan-in in the worker' });
    expect(local).toEqual([]);
  });
});
