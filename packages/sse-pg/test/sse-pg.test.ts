import { randomUUID } from 'node:crypto';
import { migrationsDir as fanoutMigrations } from '@fanout/prisma-adapter';
import { createTestDatabase, type TestDatabase } from '@fanout/testdb';
import { Hono } from 'hono';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stateEventId, streamTenantEvents, TaskEventPublisher, TaskEventSubscriber, taskEventsHandler, type KindedTaskState, type TaskEvent, type TaskState } from '../src/index.ts';
import { completed, counts, log, progress, sseReader } from './helpers.ts';

async function waitFor<T>(check: () => T | Promise<T>, message: string, timeoutMs = 15_000, intervalMs = 10): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${message}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

let db: TestDatabase;
let pool: pg.Pool;
let publisher: TaskEventPublisher;
let subscriber: TaskEventSubscriber;
const warnings: string[] = [];
const logger = { debug() {}, info() {}, warn: (m: string) => void warnings.push(m), error: (m: string) => void warnings.push(m) };

beforeAll(async () => {
  db = await createTestDatabase({ migrations: [fanoutMigrations] });
  pool = new pg.Pool({ connectionString: db.url, max: 4 });
  publisher = new TaskEventPublisher({ pool, coalesceMs: 100, logger });
  subscriber = new TaskEventSubscriber({ connectionString: db.url, livenessMs: 500, minBackoffMs: 20, logger });
  await subscriber.start();
});

afterAll(async () => {
  await subscriber?.close();
  await publisher?.close();
  await pool?.end();
  await db?.drop();
});

function collect(taskId: string) {
  const events: TaskEvent[] = [];
  const off = subscriber.subscribe(taskId, (e) => events.push(e));
  return { events, off };
}

/** What a test reads of the events it got: a log line's message, else the event's type. */
const messages = (events: readonly TaskEvent[]) => events.map((e) => (e.type === 'item.log' ? e.message : e.type));

/** A pool of the test database whose `query` goes through `through` (to count or fail statements). */
function poolThrough(through: (query: pg.Pool['query'], args: unknown[]) => unknown): pg.Pool {
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  const query = pool.query.bind(pool);
  pool.query = ((...args: unknown[]) => through(query, args)) as pg.Pool['query'];
  return pool;
}

describe('publisher and subscriber', () => {
  it('delivers events across connections, text that looks like SQL included', async () => {
    const taskId = randomUUID();
    const { events, off } = collect(taskId);
    const evil = `'); DROP TABLE fanout_task; -- "quotes" and \\ backslashes`;
    publisher.publish(log(taskId, evil));
    await waitFor(() => events.length === 1, 'the log event');
    expect(events[0]).toMatchObject({ type: 'item.log', message: evil });
    const { rows } = await pool.query(`SELECT to_regclass('fanout_task') AS t`);
    expect(rows[0].t).toBe('fanout_task');
    off();
  });

  it('coalesces progress per task and never drops the ending', async () => {
    const taskId = randomUUID();
    const { events, off } = collect(taskId);
    const raw = new pg.Client({ connectionString: db.url });
    await raw.connect();
    let notifications = 0;
    raw.on('notification', (m) => {
      if (m.payload?.includes(taskId)) notifications++;
    });
    await raw.query('LISTEN fanout_events');
    for (let settled = 1; settled <= 1000; settled++) publisher.publish(progress(taskId, settled, 1000));
    publisher.publish(completed(taskId, 1000));
    await waitFor(() => events.some((e) => e.type === 'task.completed'), 'the ending');
    await publisher.flush();
    expect(notifications).toBeLessThanOrEqual(5);
    expect(events.at(-1)).toMatchObject({ type: 'task.completed', counts: { succeeded: 1000 } });
    await raw.end();
    off();
  });

  it('sends the latest counts after a burst, and ignores progress that is older', async () => {
    const taskId = randomUUID();
    const { events, off } = collect(taskId);
    publisher.publish(progress(taskId, 10, 100));
    publisher.publish(progress(taskId, 50, 100));
    publisher.publish(progress(taskId, 30, 100)); // a settle that finished late
    await waitFor(() => events.length === 2, 'leading and trailing progress');
    expect(events.map((e) => ('counts' in e ? e.counts.succeeded : -1))).toEqual([10, 50]);
    off();
  });

  it('delivers a 50 KB log line whole, through a stored payload', async () => {
    const taskId = randomUUID();
    const { events, off } = collect(taskId);
    const line = 'x'.repeat(50 * 1024) + ' — the end';
    publisher.publish(log(taskId, line));
    await waitFor(() => events.length === 1, 'the big log line');
    expect(events[0]).toMatchObject({ type: 'item.log', message: line });
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM fanout_event_payload WHERE task_id = $1', [taskId]);
    expect(rows[0].n).toBe(1);
    off();
  });

  it('delivers a stored (large) event in its place among the ones sent after it', async () => {
    const taskId = randomUUID();
    const { events, off } = collect(taskId);
    publisher.publish(log(taskId, 'first'));
    publisher.publish(log(taskId, 'y'.repeat(20 * 1024)));
    for (let i = 0; i < 5; i++) publisher.publish(log(taskId, `after ${i}`));
    await waitFor(() => events.length === 7, 'seven log lines');
    expect(events.map((e) => (e.type === 'item.log' ? e.message.slice(0, 7) : e.type))).toEqual(['first', 'yyyyyyy', 'after 0', 'after 1', 'after 2', 'after 3', 'after 4']);
    off();
  });

  it('sends what is published while a NOTIFY is on its way in the next statement, in order', async () => {
    const taskId = randomUUID();
    const { events, off } = collect(taskId);
    // A pool of its own whose statements are counted.
    let statements = 0;
    const counted = poolThrough((query, args) => {
      statements++;
      return (query as (...a: unknown[]) => unknown)(...args);
    });
    const batched = new TaskEventPublisher({ pool: counted, logger });
    // More than one statement holds (200): the order holds across them too.
    for (let i = 0; i < 450; i++) batched.publish(log(taskId, `line ${i}`));
    const ending = batched.deliver(completed(taskId, 450));
    await ending;
    await waitFor(() => events.length === 451, 'every line and the ending');
    expect(messages(events)).toEqual([...Array.from({ length: 450 }, (_, i) => `line ${i}`), 'task.completed']);
    expect(batched.sent).toBe(451);
    // The first alone, the rest in statements of at most 200.
    expect(statements).toBeGreaterThanOrEqual(4);
    expect(statements).toBeLessThanOrEqual(5);
    await batched.close();
    await counted.end();
    off();
  });

  it('delivers two identical events of one batch both (PostgreSQL folds identical notifications of a transaction)', async () => {
    const taskId = randomUUID();
    const { events, off } = collect(taskId);
    const same = log(taskId, 'the same line twice');
    publisher.publish(log(taskId, 'first'));
    // Queued while the first is on its way: the two go in one statement.
    publisher.publish(same);
    publisher.publish(same);
    await publisher.flush();
    await waitFor(() => events.length === 3, 'three lines');
    expect(messages(events)).toEqual(['first', 'the same line twice', 'the same line twice']);
    off();
  });

  it('an event whose stored payload is refused fails alone: the others of its batch go', async () => {
    const taskId = randomUUID();
    const { events, off } = collect(taskId);
    const before = warnings.length;
    publisher.publish(log(taskId, 'first'));
    publisher.publish(log(taskId, 'before'));
    // Too large for a NOTIFY, and jsonb refuses the NUL its data carries.
    publisher.publish({ ...log(taskId, 'z'.repeat(9000)), data: { nul: 'a\u0000b' } } as TaskEvent);
    publisher.publish(log(taskId, 'after'));
    await publisher.flush();
    await waitFor(() => events.length === 3, 'the three other lines');
    expect(messages(events)).toEqual(['first', 'before', 'after']);
    expect(warnings.slice(before)).toContain('task event broadcast failed');
    off();
  });

  it('an ending it could not deliver rejects, and the ones after it still go', async () => {
    const taskId = randomUUID();
    const { events, off } = collect(taskId);
    let failNext = true;
    const flaky = poolThrough((query, args) => {
      if (!failNext) return (query as (...a: unknown[]) => unknown)(...args);
      failNext = false;
      return Promise.reject(new Error('connection lost'));
    });
    const publisher2 = new TaskEventPublisher({ pool: flaky, logger });
    await expect(publisher2.deliver(completed(taskId, 1))).rejects.toThrow('connection lost');
    await publisher2.deliver(completed(randomUUID(), 2));
    publisher2.publish(log(taskId, 'after the failure'));
    await waitFor(() => events.length === 1, 'the line after the failure');
    expect(events[0]).toMatchObject({ type: 'item.log', message: 'after the failure' });
    await publisher2.close();
    await flaky.end();
    off();
  });

  it('logs and skips notifications it cannot read, and keeps listening', async () => {
    const taskId = randomUUID();
    const { events, off } = collect(taskId);
    const before = warnings.length;
    await pool.query('SELECT pg_notify($1, $2)', ['fanout_events', 'not json at all']);
    await pool.query('SELECT pg_notify($1, $2)', ['fanout_events', JSON.stringify({ v: 1, event: { type: 'task.progress', taskId } })]);
    await pool.query('SELECT pg_notify($1, $2)', ['fanout_events', JSON.stringify({ v: 2, anything: true })]);
    publisher.publish(log(taskId, 'still here'));
    await waitFor(() => events.length === 1, 'the valid event');
    expect(warnings.length - before).toBe(3);
    off();
  });

  it('a broadcast that fails is logged and never thrown at the caller', async () => {
    const before = warnings.length;
    // Nothing listens on this port: every NOTIFY fails.
    const broken = new TaskEventPublisher({ connectionString: 'postgres://postgres:postgres@127.0.0.1:1/none', logger });
    expect(() => broken.publish(completed(randomUUID(), 1))).not.toThrow();
    await broken.close();
    expect(warnings.slice(before).some((w) => w.includes('broadcast failed'))).toBe(true);
  });

  it('refuses to publish an event that does not match the schema', async () => {
    const before = warnings.length;
    publisher.publish({ type: 'task.progress', taskId: 'not-a-uuid' } as never);
    expect(warnings.slice(before)).toEqual(['refusing to publish a malformed task event']);
  });

  it('reconnects after its connection is killed, and tells subscribers to catch up', async () => {
    const taskId = randomUUID();
    const { events, off } = collect(taskId);
    let caughtUp = 0;
    const offReconnect = subscriber.onReconnect(() => caughtUp++);
    const connects = subscriber.connects;
    const pid = subscriber.backendPid;
    expect(pid).toBeTypeOf('number');
    await pool.query('SELECT pg_terminate_backend($1)', [pid]);
    await waitFor(() => subscriber.connects > connects, 'a new connection');
    expect(caughtUp).toBe(1);
    expect(subscriber.backendPid).not.toBe(pid);
    publisher.publish(log(taskId, 'after the reconnect'));
    await waitFor(() => events.length === 1, 'an event after the reconnect');
    off();
    offReconnect();
  });
});

describe('SSE handler', () => {
  // The task states stand in for the app's task store: the handler only asks for a task's state.
  const tasks = new Map<string, TaskState>();
  const app = new Hono();
  beforeAll(() => {
    app.get(
      '/tasks/:id/events',
      taskEventsHandler({
        subscriber,
        // As a database finds it: uuids in capitals are the same uuid.
        loadTask: async (id) => tasks.get(id.toLowerCase()) ?? null,
        authorize: (c, task) => c.req.header('x-tenant') === task.tenant,
        heartbeatMs: 50,
      }),
    );
  });

  function newTask(settled: number, total: number, status: 'running' | 'completed' = 'running'): TaskState {
    const task = { id: randomUUID(), tenant: 't1', ...counts(settled, total, status) };
    tasks.set(task.id, task);
    return task;
  }

  const open = (taskId: string, headers: Record<string, string> = {}) =>
    app.request(`/tasks/${taskId}/events`, { headers: { 'x-tenant': 't1', ...headers } });

  it('starts with the current state, then streams live events with heartbeats, and ends with the ending', async () => {
    const task = newTask(3, 10);
    const res = await open(task.id);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const sse = sseReader(res.body!);
    await waitFor(() => sse.messages.length === 1, 'the initial state');
    expect(sse.messages[0]).toMatchObject({ event: 'task.progress', id: '1.3.10', data: { counts: { succeeded: 3 } } });
    await waitFor(() => sse.comments > 0, 'a heartbeat');
    publisher.publish(progress(task.id, 7, 10));
    publisher.publish(log(task.id, 'item 8 parsed'));
    publisher.publish(completed(task.id, 10));
    await waitFor(() => sse.messages.some((m) => m.event === 'task.completed'), 'the ending');
    // The intermediate progress may be replaced by the ending if both wait for the client at once
    // (only the newest state matters); the log line and the ending always arrive, in order.
    const events = sse.messages.map((m) => m.event);
    expect(events[0]).toBe('task.progress');
    expect(events.filter((e) => e !== 'task.progress')).toEqual(['item.log', 'task.completed']);
    expect(sse.messages.filter((m) => m.event === 'task.progress').map((m) => m.id)).toEqual(
      events.includes('task.progress', 1) ? ['1.3.10', '1.7.10'] : ['1.3.10'],
    );
    expect(sse.messages.at(-1)?.id).toBe('1.end');
    // The ending is the last event: the server ends the stream.
    await waitFor(() => sse.ended, 'the end of the stream');
    expect(sse.messages.at(-1)?.id).toBe('1.end');
  });

  it('a client that connects after the task finished gets the final state at once, and never twice', async () => {
    const task = newTask(10, 10, 'completed');
    const first = sseReader((await open(task.id)).body!);
    await waitFor(() => first.messages.length === 1, 'the final state');
    expect(first.messages[0]).toMatchObject({ event: 'task.completed', id: '1.end', data: { counts: { succeeded: 10, total: 10 } } });
    await waitFor(() => first.ended, 'the end of the stream');
    // Reconnecting with the ending's id: no second ending, and nothing more to wait for.
    const again = sseReader((await open(task.id, { 'last-event-id': '1.end' })).body!);
    await waitFor(() => again.ended, 'the end of the resumed stream');
    expect(again.messages).toEqual([]);
  });

  it('resumes after Last-Event-ID without repeating what the client has', async () => {
    const task = newTask(4, 10);
    const same = sseReader((await open(task.id, { 'last-event-id': stateEventId({ type: 'task.progress', taskId: task.id, tenant: 't1', at: 0, counts: counts(4, 10) }) })).body!);
    publisher.publish(progress(task.id, 6, 10));
    await waitFor(() => same.messages.length === 1, 'the next progress');
    expect(same.messages[0]).toMatchObject({ id: '1.6.10' });
    await same.cancel();
  });

  it('follows a task named in capitals under its stored id', async () => {
    const task = newTask(2, 10);
    const sse = sseReader((await open(task.id.toUpperCase())).body!);
    await waitFor(() => sse.messages.length === 1, 'the initial state');
    publisher.publish(log(task.id, 'item 3 parsed'));
    publisher.publish(progress(task.id, 5, 10));
    await waitFor(() => sse.messages.some((m) => m.event === 'item.log') && sse.messages.some((m) => m.id === '1.5.10'), 'the log line and the progress');
    await sse.cancel();
  });

  it('ignores a Last-Event-ID the task never had, and sends its current state', async () => {
    const task = newTask(4, 10);
    // A later round (one too large for a number), more settled than there are, an ending not had.
    for (const id of ['99999999999999999999999.end', `1.${'9'.repeat(400)}.10`, '1.5.10', '1.end', '2.1.10']) {
      const sse = sseReader((await open(task.id, { 'last-event-id': id })).body!);
      await waitFor(() => sse.messages.length === 1, `the current state after ${id}`);
      expect(sse.messages[0]).toMatchObject({ event: 'task.progress', id: '1.4.10' });
      await sse.cancel();
    }
  });

  it('answers 404 for another tenant and for an unknown task, before streaming anything', async () => {
    const task = newTask(1, 2);
    const other = await open(task.id, { 'x-tenant': 'someone-else' });
    expect(other.status).toBe(404);
    expect(await other.json()).toEqual({ error: { code: 'not_found', message: 'task not found' } });
    expect((await open(randomUUID())).status).toBe(404);
  });

  it('leaks nothing over 1,000 connect/disconnect cycles', async () => {
    const task = newTask(1, 2);
    const baseline = subscriber.listenerCount;
    const gc = globalThis.gc;
    expect(gc, 'tests run with --expose-gc').toBeTypeOf('function');
    gc!();
    const heapBefore = process.memoryUsage().heapUsed;
    for (let i = 0; i < 1000; i++) {
      const sse = sseReader((await open(task.id)).body!);
      await waitFor(() => sse.messages.length === 1, 'the initial state', 15_000, 1);
      await sse.cancel();
    }
    await waitFor(() => subscriber.listenerCount === baseline, 'subscriptions released');
    gc!();
    const grownMb = (process.memoryUsage().heapUsed - heapBefore) / 1024 / 1024;
    expect(grownMb).toBeLessThan(20);
  });
});

describe('tenant stream', () => {
  // Five unfinished tasks, changed lately, as the store would find them (its part of the read is
  // in the conformance suite), newest first; the stream replays at most three.
  const states: KindedTaskState[] = Array.from({ length: 5 }, (_, i) => ({ id: randomUUID(), tenant: 't9', kind: 'k', ...counts(i, 10) }));
  const reads: Array<{ since: Date | null; unfinished: boolean }> = [];
  const app = new Hono();
  beforeAll(() => {
    app.get('/events', (c) =>
      streamTenantEvents(c, {
        subscriber,
        scope: { tenant: 't9', kinds: ['k'] },
        heartbeatMs: 50,
        maxReplay: 3,
        loadStates: async (_scope, since, limit, { unfinished }) => {
          reads.push({ since, unfinished });
          return states.slice(0, limit);
        },
      }),
    );
  });

  it('a new stream gets the newest states past its replay limit, and heartbeats read only what changed, without a resync', async () => {
    reads.length = 0;
    const sse = sseReader((await app.request('/events')).body!);
    await waitFor(() => reads.length >= 4, 'three heartbeats');
    await waitFor(() => sse.messages.length === 3, 'three states');
    expect(sse.messages.map((m) => m.data.taskId)).toEqual(states.slice(0, 3).map((s) => s.id));
    expect(sse.messages.some((m) => m.event === 'resync')).toBe(false);
    expect(reads[0]).toEqual({ since: null, unfinished: true });
    // Each heartbeat reads from where the read before it began (less the clock margin of 5 s).
    const heartbeats = reads.slice(1);
    expect(heartbeats.every((r) => r.since !== null && !r.unfinished)).toBe(true);
    for (const [i, r] of heartbeats.slice(1).entries()) expect(r.since!.getTime()).toBeGreaterThanOrEqual(heartbeats[i]!.since!.getTime());
    expect(Date.now() - heartbeats.at(-1)!.since!.getTime()).toBeLessThan(5000 + 1000);
    await sse.cancel();
  });

  it('a resume reads what changed since its last event, and with more than its limit is told to reload', async () => {
    reads.length = 0;
    const last = Date.now() - 1000;
    const sse = sseReader((await app.request('/events', { headers: { 'last-event-id': String(last) } })).body!);
    await waitFor(() => sse.messages.length > 0, 'a first event');
    expect(sse.messages[0]!.event).toBe('resync');
    expect(reads[0]).toEqual({ since: new Date(last - 5000), unfinished: false });
    await sse.cancel();
  });
});
