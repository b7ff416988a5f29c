import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { broadcastRuntimeEvents, collectEventStream, TaskEventPublisher, TaskEventSubscriber } from '@fanout/sse-pg';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskItems, taskRoutes, whileKept, type Principal } from '../src/index.ts';
import { testApp, waitFor, type TestApp } from './fixtures/test-app.ts';

// What the operator console reads and does, through the routes: idempotent submits, lists with
// filters, counts by state, stored logs, failures, retries, archive and delete, one live stream
// per page, and the operations view.
const PRINCIPALS: Record<string, Principal> = {
  'token-a': { tenant: 'tenant-a', role: 'user' },
  'token-b': { tenant: 'tenant-b', role: 'user' },
  'token-ops': { tenant: 'tenant-a', role: 'operator' },
};

let t: TestApp;
let subscriber: TaskEventSubscriber;
let publisher: TaskEventPublisher;
const http = new Hono();

beforeAll(async () => {
  t = await testApp({ work: true });
  subscriber = new TaskEventSubscriber({ connectionString: t.db.url });
  await subscriber.start();
  publisher = new TaskEventPublisher({ connectionString: t.db.url, coalesceMs: 20 });
  broadcastRuntimeEvents(t.app.fanout.events, publisher);
  http.route('/api/test', taskRoutes({ fanout: t.app.fanout, definition: t.app.fanout.definition('test_batch'), authenticate: (token) => PRINCIPALS[token] ?? null, subscriber, basePath: '/api/test' }));
});

afterAll(async () => {
  await subscriber?.close();
  await t?.[Symbol.asyncDispose]();
  await publisher?.close();
});

type Json = any;
const call = (method: string, path: string, options: { token?: string; body?: unknown; headers?: Record<string, string> } = {}) =>
  http.request(`/api/test${path}`, {
    method,
    headers: { authorization: `Bearer ${options.token ?? 'token-a'}`, ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}), ...options.headers },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
const json = async (res: Response | Promise<Response>): Promise<Json> => (await res).json();
const pgClient = async (url: string) => {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return Object.assign(client, { [Symbol.asyncDispose]: () => client.end() });
};

async function submit(input: object, token = 'token-a'): Promise<string> {
  const res = await call('POST', '/tasks', { token, body: { input } });
  expect(res.status).toBe(202);
  return ((await res.json()) as { id: string }).id;
}

const ended = (id: string, token = 'token-a') =>
  waitFor(async () => {
    const task = await json(call('GET', `/tasks/${id}`, { token }));
    return ['completed', 'failed', 'cancelled'].includes(task.status) ? task : null;
  }, { message: `task ${id} ended` });

describe('console API', () => {
  it('a repeated submit with the same Idempotency-Key answers the same task; other input with that key is a 409', async () => {
    const headers = { 'idempotency-key': 'click-4f1c' };
    const first = await call('POST', '/tasks', { body: { input: { count: 2 } }, headers });
    expect(first.status).toBe(202);
    const { id } = (await first.json()) as { id: string };
    expect(first.headers.get('location')).toBe(`/api/test/tasks/${id}`);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    // A double click: both requests at once.
    const again = await Promise.all([1, 2].map(() => call('POST', '/tasks', { body: { input: { count: 2 } }, headers })));
    for (const res of again) {
      expect(res.status).toBe(202);
      expect(res.headers.get('idempotent-replayed')).toBe('true');
      expect(((await res.json()) as { id: string }).id).toBe(id);
    }
    const conflict = await call('POST', '/tasks', { body: { input: { count: 3 } }, headers });
    expect(conflict.status).toBe(409);
    expect(((await conflict.json()) as Json).error).toMatchObject({ code: 'conflict', issues: [{ field: 'headers.idempotency-key', rule: 'idempotency_conflict' }] });
    // The key is the tenant's: another tenant with the same key gets a task of its own.
    const other = await json(call('POST', '/tasks', { token: 'token-b', body: { input: { count: 2 } }, headers }));
    expect(other.id).not.toBe(id);
    const bad = await call('POST', '/tasks', { body: { input: { count: 2 } }, headers: { 'idempotency-key': 'x'.repeat(201) } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as Json).error.issues).toEqual([expect.objectContaining({ field: 'headers.idempotency-key' })]);
    const list = await json(call('GET', '/tasks?limit=200'));
    expect(list.tasks.filter((x: Json) => x.id === id)).toHaveLength(1);
    expect(list.tasks.find((x: Json) => x.id === id).summary).toBe('2 items');
    await ended(id);
  });

  it('lists by status group, finds a task by the start of its id, archives and deletes finished tasks only', async () => {
    const done = await submit({ count: 1 });
    await ended(done);
    const running = await submit({ count: 3, item: { sleepMs: 30_000 } });
    await waitFor(async () => (await json(call('GET', `/tasks/${running}`))).status === 'running', { message: 'running' });
    const ids = async (query: string) => (await json(call('GET', `/tasks?limit=200&${query}`))).tasks.map((x: Json) => x.id);
    expect(await ids('status=active')).toContain(running);
    expect(await ids('status=active')).not.toContain(done);
    expect(await ids('status=finished')).toContain(done);
    expect(await ids(`q=${done.slice(0, 13)}`)).toEqual([done]);
    expect(await ids(`q=${done.toUpperCase()}`)).toEqual([done]);
    expect((await call('GET', '/tasks?q=zz')).status).toBe(400);

    // What is refused of the task in the path is named as the path's part.
    for (const refused of [await call('POST', `/tasks/${running}/archive`), await call('DELETE', `/tasks/${running}`)]) {
      expect(refused.status).toBe(409);
      expect((await json(refused)).error.issues).toEqual([{ field: 'params.id', rule: 'conflict', message: expect.any(String) }]);
    }
    const before = (await json(call('GET', '/tasks/summary'))).counts;
    const archived = await json(call('POST', `/tasks/${done}/archive`));
    expect(archived.archivedAt).not.toBeNull();
    expect(await ids('status=finished')).not.toContain(done);
    expect(await ids('archived=true')).toEqual(expect.arrayContaining([done]));
    const after = (await json(call('GET', '/tasks/summary'))).counts;
    expect(after.archived).toBe(before.archived + 1);
    expect(after.completed).toBe(before.completed - 1);
    expect(after.running).toBeGreaterThanOrEqual(1);

    expect((await call('DELETE', `/tasks/${done}`)).status).toBe(204);
    expect((await call('GET', `/tasks/${done}`)).status).toBe(404);
    expect((await call('DELETE', `/tasks/${done}`)).status).toBe(404);
    await call('POST', `/tasks/${running}/cancel`);
    await ended(running);
  });

  it('counts items by state, a retry waiting with its time included, and pages the waiting ones', async () => {
    const id = await submit({ count: 6, every: 2, special: { transient: 1, retryAfterMs: 60_000 } });
    const counts = await waitFor(async () => {
      const c = await json(call('GET', `/tasks/${id}/counts`));
      return c.waitingRetry === 3 && c.succeeded === 3 ? c : null;
    }, { message: 'three items waiting for a retry' });
    expect(counts).toMatchObject({ total: 6, queued: 0, running: 0, succeeded: 3, failed: 0, cancelled: 0 });
    expect(Date.parse(counts.nextRetryAt) - Date.now()).toBeGreaterThan(50_000);
    const waiting = await json(call('GET', `/tasks/${id}/items?status=waiting`));
    expect(waiting.items.map((i: Json) => i.key)).toEqual(['item-0', 'item-2', 'item-4']);
    expect(waiting.items[0]).toMatchObject({ status: 'pending', attempts: 1, error: { code: 'busy' } });
    expect(Date.parse(waiting.items[0].nextAttemptAt)).toBeGreaterThan(Date.now() + 50_000);
    await call('POST', `/tasks/${id}/cancel`);
    expect(await ended(id)).toMatchObject({ status: 'cancelled', succeeded: 3, cancelled: 3 });
  });

  it('keeps what handlers logged, and groups failures by code with a CSV of just the failures', async () => {
    const id = await submit({ count: 9, item: { logLines: 2 }, every: 3, special: { permanent: true } });
    const task = await ended(id);
    expect(task).toMatchObject({ status: 'completed', succeeded: 6, failed: 3 });
    const items = await json(call('GET', `/tasks/${id}/items?limit=3`));
    const logs = await json(call('GET', `/tasks/${id}/items/${items.items[1].id}/logs`));
    expect(logs.logs).toEqual([
      expect.objectContaining({ attempt: 1, message: 'item 1, attempt 1: line 1', data: { line: 1 } }),
      expect.objectContaining({ attempt: 1, message: 'item 1, attempt 1: line 2', data: { line: 2 } }),
    ]);
    // Another tenant reads no logs.
    expect((await call('GET', `/tasks/${id}/items/${items.items[1].id}/logs`, { token: 'token-b' })).status).toBe(404);
    // One item, as the pages show it; an item that is not the task's is a 404, its logs too (not an empty log).
    expect(await json(call('GET', `/tasks/${id}/items/${items.items[1].id}`))).toEqual(items.items[1]);
    expect((await call('GET', `/tasks/${id}/items/${items.items[1].id}`, { token: 'token-b' })).status).toBe(404);
    const other = await submit({ count: 1 });
    await ended(other);
    const otherItem = (await json(call('GET', `/tasks/${other}/items`))).items[0];
    for (const itemId of [randomUUID(), otherItem.id]) {
      for (const path of [`/tasks/${id}/items/${itemId}`, `/tasks/${id}/items/${itemId}/logs`]) {
        const res = await call('GET', path);
        expect(res.status, path).toBe(404);
        expect((await json(res)).error).toMatchObject({ code: 'not_found', message: `item ${itemId} is not an item of task ${id}` });
      }
    }
    expect(items.items[1].durationMs).toBeGreaterThanOrEqual(0);

    const failures = await json(call('GET', `/tasks/${id}/failures`));
    expect(failures.groups).toEqual([{ code: 'corrupt', count: 3, retryable: 0, message: 'corrupt input' }]);
    const csv = await call('GET', `/tasks/${id}/failures.csv`);
    expect(csv.headers.get('content-type')).toContain('text/csv');
    const lines = (await csv.text()).trim().split('\r\n');
    expect(lines[0]).toBe('item_id,key,attempts,round,error_code,error,retryable,finished_at,snapshot');
    expect(lines.slice(1).map((l) => l.split(',')[1])).toEqual(['item-0', 'item-3', 'item-6']);
    expect(lines[1]).toContain(',corrupt,corrupt input,false,');
  });

  it('retries only the retryable failures, or one chosen item; a permanent failure is not retryable', async () => {
    const id = await submit({ count: 4, every: 2, special: { transient: 3 }, item: { permanent: false } });
    const first = await ended(id);
    // Items 0 and 2 failed transiently on every attempt: retryable.
    expect(first).toMatchObject({ succeeded: 2, failed: 2 });
    expect((await json(call('GET', `/tasks/${id}/counts`))).retryableFailed).toBe(2);
    const retried = await call('POST', `/tasks/${id}/retry-failed`, { body: { retryableOnly: true } });
    expect(retried.status).toBe(202);
    expect(await retried.json()).toMatchObject({ retried: 2, task: { round: 2, status: 'running', roundSettledAtStart: 2 } });
    // Round 2's attempts start from 1 again, and the items still fail on attempts 1-3.
    expect(await ended(id)).toMatchObject({ round: 2, failed: 2 });

    const permanent = await submit({ count: 3, every: 3, special: { permanent: true, permanentUntilRound: 2 } });
    expect(await ended(permanent)).toMatchObject({ failed: 1 });
    const none = await call('POST', `/tasks/${permanent}/retry-failed`, { body: { retryableOnly: true } });
    expect(none.status).toBe(409);
    expect(((await none.json()) as Json).error.message).toContain('no retryable failed items');
    const failed = await json(call('GET', `/tasks/${permanent}/items?status=failed`));
    expect(failed.items[0].error).toMatchObject({ code: 'corrupt', retryable: false });
    const notFailed = await json(call('GET', `/tasks/${permanent}/items?status=succeeded&limit=1`));
    const notRetried = await call('POST', `/tasks/${permanent}/items/${notFailed.items[0].id}/retry`, { body: {} });
    expect(notRetried.status).toBe(409);
    expect((await json(notRetried)).error.issues).toEqual([{ field: 'params.itemId', rule: 'conflict', message: expect.stringContaining('is not a failed item') }]);
    const noSuchItem = await call('POST', `/tasks/${permanent}/items/${randomUUID()}/retry`, { body: {} });
    expect(noSuchItem.status).toBe(404);
    expect((await json(noSuchItem)).error.message).toMatch(/is not an item of task/);
    const one = await call('POST', `/tasks/${permanent}/items/${failed.items[0].id}/retry`, { body: {} });
    expect(one.status).toBe(202);
    expect(await ended(permanent)).toMatchObject({ status: 'completed', succeeded: 3, failed: 0, round: 2 });
    const foreign = await call('POST', `/tasks/${permanent}/items/${failed.items[0].id}/retry`, { token: 'token-b', body: {} });
    expect(foreign.status).toBe(404);
    expect(await json(foreign)).toEqual({ error: { code: 'not_found', message: `task ${permanent} not found` } });
  });

  it('one stream carries every task of the tenant, resumes after Last-Event-ID, and shows no other tenant', async () => {
    const res = await call('GET', '/events');
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const sse = collectEventStream(res.body!);
    const mine = await Promise.all([submit({ count: 30 }), submit({ count: 20 }), submit({ count: 10 })]);
    const theirs = await submit({ count: 5 }, 'token-b');
    await waitFor(() => mine.every((id) => sse.messages.some((m) => m.event === 'task.completed' && m.data.taskId === id)), { message: 'three endings on one stream' });
    expect(sse.messages.some((m) => m.data.taskId === theirs)).toBe(false);
    for (const id of mine) {
      const states = sse.messages.filter((m) => m.data.taskId === id && m.data.counts);
      const settled = states.map((m) => m.data.counts.succeeded + m.data.counts.failed + m.data.counts.cancelled);
      expect(settled).toEqual([...settled].sort((a, b) => a - b)); // only forward
      expect(states.filter((m) => m.event === 'task.completed')).toHaveLength(1);
    }
    const ids = sse.messages.map((m) => Number(m.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    await sse.cancel();

    // A reconnect from the last id sees what changed since (here: the endings again) and no gap.
    const resumed = collectEventStream((await call('GET', '/events', { headers: { 'last-event-id': String(ids[0]) } })).body!);
    await waitFor(() => mine.every((id) => resumed.messages.some((m) => m.event === 'task.completed' && m.data.taskId === id)), { message: 'the endings after a resume' });
    await resumed.cancel();

    // An id later than any this server's clock could have given (past what a date can hold, or
    // years ahead) is not a place to resume from: the stream starts afresh with the unfinished tasks.
    // (Its items take a minute, abortable: it is still running for both streams, then cancelled.)
    const running = await submit({ count: 2, item: { sleepMs: 60_000 } });
    for (const id of ['9000000000000000', String(Date.now() + 365 * 86_400_000)]) {
      const fresh = collectEventStream((await call('GET', '/events', { headers: { 'last-event-id': id } })).body!);
      await waitFor(() => fresh.messages.some((m) => m.data.taskId === running), { message: `the running task's state after Last-Event-ID ${id}` });
      expect(Number(fresh.messages[0]!.id)).toBeLessThan(Date.now() + 60_000);
      await fresh.cancel();
    }
    expect((await call('POST', `/tasks/${running}/cancel`)).status).toBe(200);
    expect(await ended(running)).toMatchObject({ status: 'cancelled' });
  });

  it('a stream focused on a task also carries its item failures; another tenant’s task cannot be focused', async () => {
    const id = await submit({ count: 4, item: { sleepMs: 300 }, every: 2, special: { permanent: true } });
    const sse = collectEventStream((await call('GET', `/events?task=${id}`)).body!);
    // The same task named in capitals: its item events are the stored id's.
    const capitals = collectEventStream((await call('GET', `/events?task=${id.toUpperCase()}`)).body!);
    for (const stream of [sse, capitals]) {
      await waitFor(() => stream.messages.some((m) => m.event === 'task.completed' && m.data.taskId === id), { message: 'the ending' });
      expect(stream.messages.filter((m) => m.event === 'item.failed').map((m) => m.data.key).sort()).toEqual(['item-0', 'item-2']);
      await stream.cancel();
    }
    expect((await call('GET', `/events?task=${id}`, { token: 'token-b' })).status).toBe(404);
    expect((await call('GET', '/events?task=nope')).status).toBe(400);
  });

  it("streams a task's last item's outcome before its ending", async () => {
    // The failing item settles last, and its settle ends the task (its 3 s leave the stream ample
    // time to connect first).
    const id = await submit({ count: 2, every: 2, special: { permanent: true, sleepMs: 3000 } });
    const sse = collectEventStream((await call('GET', `/tasks/${id}/events`)).body!);
    await waitFor(() => sse.messages.some((m) => m.event === 'task.completed'), { message: 'the ending' });
    const kinds = sse.messages.map((m) => `${m.event}${m.event === 'item.failed' ? `:${m.data.key}:${m.data.willRetry}` : ''}`);
    expect(kinds).toContain('item.failed:item-0:false');
    expect(kinds.indexOf('item.failed:item-0:false')).toBeLessThan(kinds.indexOf('task.completed'));
    await sse.cancel();
  });

  it('tells who is calling, and shows operations to operators only', async () => {
    expect(await json(call('GET', '/me'))).toEqual({ tenant: 'tenant-a', role: 'user' });
    expect(await json(call('GET', '/me', { token: 'token-ops' }))).toEqual({ tenant: 'tenant-a', role: 'operator' });
    const refused = await call('GET', '/ops');
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as Json).error.code).toBe('forbidden');
    const id = await submit({ count: 40 });
    await ended(id);
    const ops = await waitFor(async () => {
      const o = await json(call('GET', '/ops', { token: 'token-ops' }));
      return o.series.reduce((n: number, p: Json) => n + p.settled, 0) >= 40 ? o : null;
    }, { message: 'throughput reported', timeoutMs: 20_000 });
    expect(ops.queues.map((q: Json) => q.name)).toEqual(['test_batch_manager', 'test_batch_items']);
    expect(ops.workers).toEqual([expect.objectContaining({ role: 'worker', pid: process.pid, alive: true, concurrency: 20 })]);
    // Every 10-second bucket of the 15 minutes, in order; the buckets the task settled in have quantiles.
    expect(ops.series.length).toBeGreaterThanOrEqual(90);
    expect(ops.series.every((p: Json, i: number) => i === 0 || Date.parse(p.at) - Date.parse(ops.series[i - 1].at) === 10_000)).toBe(true);
    expect(ops.series.filter((p: Json) => p.settled > 0).every((p: Json) => typeof p.p50Ms === 'number' && typeof p.p95Ms === 'number')).toBe(true);
    expect(ops.series.filter((p: Json) => p.settled === 0).every((p: Json) => p.p50Ms === null)).toBe(true);
    expect(ops.recoveries).toEqual({ lapsedRequeued: 0, lapsedFailed: 0, orphansRequeued: 0, countersRepaired: 0, deadLettered: 0 });
  });
  it('a task whose items retention deleted keeps its row and counts; its items, counts, logs and failures answer 410', async () => {
    const id = await submit({ count: 3, every: 3, special: { permanent: true } });
    const done = await ended(id);
    expect(done).toMatchObject({ status: 'completed', succeeded: 2, failed: 1, purgedAt: null });
    await using db = await pgClient(t.db.url);
    const state = async () => (await db.query('SELECT status, round, announced_round, fanin_round FROM fanout_task WHERE id = $1', [id])).rows[0];
    await waitFor(async () => {
      const row = await state();
      return row.announced_round >= row.round && row.fanin_round >= row.round;
    }, { timeoutMs: 20_000, message: 'announced and fanned in', describe: async () => JSON.stringify(await state()) });
    // As if it had finished two days ago.
    await db.query(`UPDATE fanout_task SET completed_at = now() - interval '2 days' WHERE id = $1`, [id]);
    // An export under way when the purge begins fails at its end (its later pages would miss rows).
    const exporting = whileKept(t.app.fanout, id, taskItems(t.app.fanout, id));
    expect((await exporting.next()).value).toMatchObject({ key: 'item-0' });
    let purge;
    do purge = await t.app.fanout.store.purgeFinished!(86_400_000, 1000, ['test_batch']);
    while (purge.taskId !== null && !purge.tasks?.includes(id));
    expect(purge).toMatchObject({ purged: true, tasks: expect.arrayContaining([id]) });
    await expect(async () => {
      for await (const _ of exporting);
    }).rejects.toMatchObject({ status: 410, code: 'purged', message: expect.stringContaining('the export is incomplete') });
    const task = await json(call('GET', `/tasks/${id}`));
    expect(task).toMatchObject({ status: 'completed', total: 3, succeeded: 2, failed: 1, purgedAt: expect.any(String) });
    for (const path of ['items', 'counts', 'failures', 'failures.csv', `items/${'00000000-0000-4000-8000-000000000000'}`, `items/${'00000000-0000-4000-8000-000000000000'}/logs`]) {
      const res = await call('GET', `/tasks/${id}/${path}`);
      expect(res.status, path).toBe(410);
      expect((await json(res)).error).toMatchObject({ code: 'purged', message: expect.stringContaining('retention') });
    }
    const retry = await call('POST', `/tasks/${id}/retry-failed`, { body: {} });
    expect(retry.status).toBe(409);
    expect((await json(retry)).error).toMatchObject({ message: expect.stringContaining('retention'), issues: [{ field: 'params.id', rule: 'conflict' }] });
  });
});
