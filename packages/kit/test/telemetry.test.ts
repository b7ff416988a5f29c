import { randomBytes } from 'node:crypto';
import { ATTR, consoleLogger, METRIC, SPAN } from '@fanout/core';
import { createTestDatabase, waitFor, type TestDatabase } from '@fanout/testdb';
import { SpanKind } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appHttp, appMigrations, listen, loadEnv, openApp, parseTokens, tokenAuthenticator, type AppRuntime, type Listening } from '../src/index.ts';
import { TEST_ENV, TEST_TOKEN, TEST_TOKENS } from '../src/testing/index.ts';
import flaky, { FLAKY_SECRET } from './fixtures/flaky-app.ts';
import { captureTelemetry, sumOf, type CapturedTelemetry } from './fixtures/telemetry.ts';

// The runtime's traces, metrics and logs with an SDK registered in this process (in-memory span
// exporter, a metric reader read on demand): the app, its HTTP surface, its manager and its
// workers all run here, so one exporter sees every span.
let otel: CapturedTelemetry;
let db: TestDatabase;
let rt: AppRuntime<any, any, any>;
let server: Listening;
const lines: Record<string, unknown>[] = [];
const raw: string[] = [];

beforeAll(async () => {
  otel = captureTelemetry();
  db = await createTestDatabase({ migrations: appMigrations(flaky) });
  const env = loadEnv({}, { ...Object.fromEntries(Object.entries(TEST_ENV).map(([k, v]) => [k, String(v)])), DATABASE_URL: db.url, FANOUT_STALL_MS: '1000' });
  const logger = consoleLogger('debug', { app: 'flaky' }, { write: (line) => (raw.push(line), lines.push(JSON.parse(line))) });
  rt = await openApp(flaky, { env, role: 'local', databaseUrl: db.url, logger });
  await rt.fanout.start({ role: 'local', maintenance: false });
  server = await listen(appHttp(rt, { authenticate: tokenAuthenticator(parseTokens(TEST_TOKENS)) }), { port: 0, host: '127.0.0.1' });
});

afterAll(async () => {
  await server?.close();
  await rt?.close({ graceMs: 1000 });
  await db?.drop();
  await otel?.close();
});

async function submit(input: Record<string, unknown>, headers: Record<string, string> = {}): Promise<string> {
  const res = await fetch(`${server.url}/api/flaky/tasks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_TOKEN.a}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ input }),
  });
  expect(res.status).toBe(202);
  return ((await res.json()) as { id: string }).id;
}

const finished = (id: string) => waitFor(async () => {
  const task = await rt.fanout.getTask(id);
  return task && ['completed', 'failed', 'cancelled'].includes(task.status) ? task : null;
}, { message: `task ${id} to finish`, timeoutMs: 60_000 });

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
const idOf = (span: ReadableSpan) => span.spanContext().spanId;

describe('telemetry with an SDK registered', () => {
  it('one 100-item task over HTTP with one transient failure is one trace: request, submit, manager, page, every item (its handler running inside it) with its claim, limit waits, retry and settle; metrics count what the task counts', async () => {
    const traceId = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const before = await otel.metrics();
    const id = await submit({ count: 100, transient: ['n7'], limited: ['n1', 'n2', 'n3'], rated: ['n10', 'n11', 'n12', 'n13', 'n14'] }, { traceparent: `00-${traceId}-${callerSpan}-01` });
    const task = await finished(id);
    expect(task).toMatchObject({ status: 'completed', total: 100, succeeded: 100, failed: 0 });

    // Item spans end once their outcome is stored, just after the statement that finished the task;
    // the deliveries they link to end when their job's handler returns, which can be a moment later.
    const inTrace = await waitFor(() => {
      const exported = otel.spans();
      const ids = new Set(exported.map(idOf));
      const spans = exported.filter((s) => s.spanContext().traceId === traceId);
      const items = spans.filter((s) => s.name === SPAN.item);
      return items.length === 101 && items.every((item) => item.links.every((l) => ids.has(l.context.spanId))) ? spans : null;
    }, { message: '101 item spans in the trace, and the spans they link to' });
    const all = otel.spans();
    const byName = (name: string) => inTrace.filter((s) => s.name === name);
    const one = (name: string) => {
      const found = byName(name);
      expect(found, name).toHaveLength(1);
      return found[0]!;
    };

    // The request continues the caller's trace; the submit, the manager's job and its dispatch follow.
    const request = inTrace.find((s) => s.kind === SpanKind.SERVER)!;
    expect(request.name).toBe('POST /api/flaky/tasks');
    expect(parentOf(request)).toBe(callerSpan);
    expect(request.attributes['http.response.status_code']).toBe(202);
    const submitSpan = one(SPAN.submit);
    expect(parentOf(submitSpan)).toBe(idOf(request));
    expect(submitSpan.attributes[ATTR.taskId]).toBe(id);
    const managerSend = one('insert kit_flaky_manager');
    expect(parentOf(managerSend)).toBe(idOf(submitSpan));
    // pg-boss delivers the manager job in a trace of its own; the dispatch continues the submit's
    // (its job carried it) and links to the delivery.
    const dispatch = one(SPAN.dispatch);
    expect(parentOf(dispatch)).toBe(idOf(submitSpan));
    expect(dispatch.links.map((l) => all.find((x) => idOf(x) === l.context.spanId)?.name)).toEqual(['process kit_flaky_manager']);
    const page = one(SPAN.page);
    expect(parentOf(page)).toBe(idOf(dispatch));
    expect(page.attributes).toMatchObject({ [ATTR.pageItems]: 100, [ATTR.inserted]: 100 });
    // The page went in with its tenant's jobs of the child queue (they serve the tenant, not the task).
    expect(byName('insert kit_flaky_items').some((s) => parentOf(s) === idOf(page))).toBe(true);

    // Every attempt of every item: 100 items, item n7 twice.
    const items = byName(SPAN.item);
    expect(new Set(items.map((s) => s.attributes[ATTR.itemId])).size).toBe(100);
    for (const item of items) {
      expect(item.attributes[ATTR.taskId]).toBe(id);
      expect(item.kind).toBe(SpanKind.CONSUMER);
      // Under the dispatch of its task, retries included (the task carries the dispatch's context).
      expect(parentOf(item)).toBe(idOf(dispatch));
      const children = inTrace.filter((s) => parentOf(s) === idOf(item)).map((s) => s.name).sort();
      // The handler runs inside the item span: its limit waits (below) and a retry are its children.
      expect(children.filter((name) => name !== SPAN.limitWait)).toEqual(item.attributes[ATTR.decision] === 'retry' ? [SPAN.retry] : []);
      expect(typeof item.attributes[ATTR.handlerMs]).toBe('number');
      // The delivery (pg-boss's span, a trace of its own) and its claim statement are linked.
      const linked = item.links.map((l) => all.find((x) => idOf(x) === l.context.spanId)?.name).sort();
      expect(linked).toEqual([SPAN.claim, 'process kit_flaky_items']);
    }
    // The statements that stored the outcomes (each for a batch of items) link to the items.
    const settledItems = new Set(all.filter((s) => s.name === SPAN.settle).flatMap((s) => s.links.map((l) => l.context.spanId)));
    for (const item of items.filter((s) => s.attributes[ATTR.outcome] === 'succeeded')) {
      expect(settledItems.has(idOf(item))).toBe(true);
      expect(item.attributes[ATTR.recorded]).toBe(true);
      expect(typeof item.attributes[ATTR.settleWaitMs]).toBe('number');
    }

    const retried = items.filter((s) => s.attributes[ATTR.attempt] === 2);
    expect(retried).toHaveLength(1);
    const failedAttempt = items.find((s) => s.attributes[ATTR.itemId] === retried[0]!.attributes[ATTR.itemId] && s.attributes[ATTR.attempt] === 1)!;
    expect(failedAttempt.attributes).toMatchObject({ [ATTR.errorType]: 'http_503', [ATTR.errorKind]: 'transient', [ATTR.decision]: 'retry', [ATTR.retryDelayMs]: 0 });
    expect(failedAttempt.events.map((e) => e.name)).toContain('exception');
    const retry = one(SPAN.retry);
    expect(parentOf(retry)).toBe(idOf(failedAttempt));
    expect(retry.attributes).toMatchObject({ [ATTR.attempt]: 1, [ATTR.errorType]: 'http_503', [ATTR.decision]: 'retry', [ATTR.retryDelayMs]: 0, [ATTR.recorded]: true });
    expect(retried[0]!.attributes[ATTR.outcome]).toBe('succeeded');

    // Limit waits are children of the item whose handler waited, with how long: the global limit's
    // three, and the rate limit's (two calls a second: of five started together, three waited).
    const waits = byName(SPAN.limitWait);
    expect(waits.filter((w) => w.attributes[ATTR.limitKind] === 'global')).toHaveLength(3);
    const rateWaits = waits.filter((w) => w.attributes[ATTR.limitKind] === 'rate');
    expect(rateWaits.length).toBeGreaterThanOrEqual(1);
    expect(Math.max(...rateWaits.map((w) => w.attributes[ATTR.waitedMs] as number))).toBeGreaterThan(0);
    for (const wait of waits) {
      expect(inTrace.find((s) => idOf(s) === parentOf(wait))?.name).toBe(SPAN.item);
      expect(wait.attributes).toMatchObject(wait.attributes[ATTR.limitKind] === 'global' ? { [ATTR.limitName]: 'kit_flaky_upstream' } : { [ATTR.limitName]: 'kit_flaky_rpm' });
      expect(typeof wait.attributes[ATTR.waitedMs]).toBe('number');
    }

    // Metrics count what the task counts.
    const after = await otel.metrics();
    const delta = (name: string, where: Record<string, unknown> = {}) => sumOf(after, name, where) - sumOf(before, name, where);
    const def = { [ATTR.definition]: 'kit_flaky', [ATTR.tenant]: 'team-a' };
    expect(delta(METRIC.tasksSubmitted, def)).toBe(1);
    expect(delta(METRIC.itemsSettled, { ...def, [ATTR.outcome]: 'succeeded' })).toBe(task.succeeded);
    expect(delta(METRIC.itemsSettled, { ...def, [ATTR.outcome]: 'failed' })).toBe(task.failed);
    expect(delta(METRIC.itemsRetried, { ...def, [ATTR.errorType]: 'http_503' })).toBe(1);
    expect(delta(METRIC.tasksFinished, { ...def, [ATTR.taskStatus]: 'completed' })).toBe(1);
    expect(delta(METRIC.itemDuration, { [ATTR.definition]: 'kit_flaky', [ATTR.outcome]: 'succeeded' })).toBe(100);
    expect(delta(METRIC.itemQueueWait, { [ATTR.definition]: 'kit_flaky' })).toBe(101);
    expect(delta(METRIC.limitWaitDuration, { [ATTR.limitName]: 'kit_flaky_upstream' })).toBe(3);
    expect(delta(METRIC.limitWaitDuration, { [ATTR.limitName]: 'kit_flaky_rpm', [ATTR.limitKind]: 'rate' })).toBe(rateWaits.length);
    expect(sumOf(after, METRIC.itemsInFlight, { [ATTR.definition]: 'kit_flaky' })).toBe(0);
    expect(sumOf(after, METRIC.limitSlotsInUse, { [ATTR.limitName]: 'kit_flaky_upstream' })).toBe(0);
    // pg-boss's own metrics arrive through the same provider.
    expect(after.some((p) => p.name === 'messaging.client.sent.messages')).toBe(true);
  });

  it('the log lines of a failing item all carry its definition, task, item and attempt, and no credential is written anywhere', async () => {
    const id = await submit({ count: 3, permanent: ['n1'], transient: ['n2'] });
    await finished(id);
    const failing = (await rt.fanout.listItems(id, { status: 'failed', limit: 10 })).rows;
    expect(failing.map((i) => i.key)).toEqual(['n1']);
    const retriedItem = (await rt.fanout.listItems(id, { limit: 10 })).rows.find((i) => i.key === 'n2')!;
    for (const item of [failing[0]!, retriedItem]) {
      const about = await waitFor(() => {
        const found = lines.filter((l) => JSON.stringify(l).includes(item.id));
        return found.some((l) => l.msg === 'item failed') ? found : null;
      }, { message: 'the log lines of the failing item' });
      expect(about.map((l) => l.msg)).toEqual(expect.arrayContaining(['item 1 attempt 1', 'calling the upstream', 'item failed'].map((m) => (item.key === 'n1' ? m : m.replace('item 1', 'item 2')))));
      for (const line of about) {
        expect(line, JSON.stringify(line)).toMatchObject({ definition: 'kit_flaky', taskId: id, itemId: item.id, attempt: expect.any(Number) });
        // Written inside the item's span, the "item failed" line included: the trace and span ids
        // are those of the item's attempt, to jump from a line to its trace.
        const span = await waitFor(
          () => otel.spans().find((s) => s.name === SPAN.item && s.attributes[ATTR.itemId] === item.id && s.attributes[ATTR.attempt] === line.attempt),
          { message: `the span of attempt ${String(line.attempt)}` },
        );
        expect(line.traceId, JSON.stringify(line)).toBe(span.spanContext().traceId);
        if (line.msg === 'item failed') expect(line.spanId).toBe(span.spanContext().spanId);
      }
    }
    expect(lines.find((l) => l.msg === 'item failed' && l.itemId === failing[0]!.id)).toMatchObject({ code: 'malformed', retry: false, attempt: 1 });
    expect(lines.find((l) => l.msg === 'item failed' && l.itemId === retriedItem.id)).toMatchObject({ code: 'http_503', retry: true, attempt: 1 });
    // The stored lines (shown by the console and the API) are masked too.
    const stored = await rt.fanout.store.itemLogs(id, failing[0]!.id, 50);
    expect(stored.map((l) => l.message)).toEqual(['item 1 attempt 1']);
    expect(stored[0]!.data).toEqual({ n: 1, apiKey: '[redacted]' });
    const text = raw.join('');
    expect(text).not.toContain(FLAKY_SECRET);
    expect(text).not.toContain(TEST_TOKEN.a);
    expect(text).not.toContain(new URL(db.url).password || 'no-password-in-url');
  });

  it("a chatty item's stored lines stay bounded: 500 an attempt, long messages and data cut, NUL characters and bigints stored, a bad line losing no other", async () => {
    const id = await submit({ count: 2, chatty: ['n1'] });
    await finished(id);
    const chatty = (await rt.fanout.listItems(id, { limit: 10 })).rows.find((i) => i.key === 'n1')!;
    // 501 lines kept (500 and the last saying so), of which one the database refused.
    const stored = await waitFor(async () => {
      const found = await rt.fanout.store.itemLogs(id, chatty.id, 1000);
      return found.length === 500 && found.at(-1)!.message.startsWith('(more lines') ? found : null;
    }, { message: '500 stored lines' });
    expect(stored[0]!.message).toBe('item 1 attempt 1');
    expect(stored[1]).toMatchObject({ message: 'page 1 text', data: { text: 'ab', pages: '12' } });
    expect(stored[2]!.message).toBe(`${'x'.repeat(4000)}… (cut at 4000 characters)`);
    const big = stored[3]!.data as { truncated: string; length: number };
    expect(big.truncated).toHaveLength(8000);
    expect(big.length).toBeGreaterThan(8000);
    expect(stored.map((l) => l.message)).not.toContain('refused');
    expect(stored[4]!.message).toBe('line 5');
    expect(stored[498]!.message).toBe('line 499');
    expect(stored[499]!.message).toBe('(more lines of this attempt were not stored: 500 is the limit)');
    expect(lines.find((l) => l.msg === 'could not store some item log lines; they are only in the live stream')).toMatchObject({ lines: 1 });
  });

  it('the figures the alert rules read move: items failing, tasks past their deadline, tasks making no progress, leases lapsing', async () => {
    const def = { [ATTR.definition]: 'kit_flaky' };
    const before = await otel.metrics();
    // Two tasks whose item blocks, so their settled counts stop moving; one has a 1 s deadline and
    // runs past it (the maintenance loop, which would stop it, is off here).
    const id = await submit({ count: 3, block: ['n0'], permanent: ['n1'] });
    const overdueId = ((await (await fetch(`${server.url}/api/flaky/tasks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_TOKEN.a}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input: { count: 1, block: ['n0'] }, options: { deadlineMs: 1000 } }),
    })).json()) as { id: string }).id;
    const failed = await waitFor(async () => {
      const now = await otel.metrics();
      return sumOf(now, METRIC.itemsSettled, { ...def, [ATTR.outcome]: 'failed', [ATTR.errorType]: 'malformed' }) - sumOf(before, METRIC.itemsSettled, { ...def, [ATTR.outcome]: 'failed', [ATTR.errorType]: 'malformed' }) === 1;
    }, { message: 'the failure counted' });
    expect(failed).toBe(true);
    await waitFor(async () => sumOf(await otel.metrics(), METRIC.tasksOverdue, def) === 1, { message: 'the task past its deadline', timeoutMs: 15_000 });
    await waitFor(async () => sumOf(await otel.metrics(), METRIC.tasksStalled, def) === 2, { message: 'both tasks stalled', timeoutMs: 15_000 });
    expect(sumOf(await otel.metrics(), METRIC.tasksActive, { ...def, [ATTR.taskStatus]: 'running' })).toBe(2);
    // The console's operations view reads the same figures.
    const ops = await rt.fanout.operations();
    expect(ops.attention?.overdue.map((t) => t.id)).toEqual([overdueId]);
    expect(ops.attention?.stalled.map((t) => t.id).sort()).toEqual([id, overdueId].sort());
    expect(ops.attention?.active.running).toBe(2);
    await waitFor(async () => (await rt.fanout.operations()).errors.find((e) => e.code === 'malformed' && e.failed >= 1), { message: 'the failure in the presence report', timeoutMs: 15_000 });

    // The maintenance loop stops the overdue task: counted as failed by its deadline.
    await rt.fanout.runMaintenance();
    await finished(overdueId);
    const afterStop = await otel.metrics();
    expect(sumOf(afterStop, METRIC.tasksOverdue, def)).toBe(0);
    expect(sumOf(afterStop, METRIC.tasksFinished, { ...def, [ATTR.taskStatus]: 'failed', [ATTR.stopReason]: 'deadline' }) - sumOf(before, METRIC.tasksFinished, { ...def, [ATTR.taskStatus]: 'failed', [ATTR.stopReason]: 'deadline' })).toBe(1);
    await rt.fanout.cancel(id);
    await finished(id);

    // Another worker takes the item over (its claim token changes): the live worker that ran it
    // notices at its next renewal and counts a lost lease. Then that other worker "dies": its lease
    // lapses, and the maintenance loop recovers the item and counts it.
    const lapsedId = ((await (await fetch(`${server.url}/api/flaky/tasks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_TOKEN.a}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input: { count: 1, block: ['n0'] } }),
    })).json()) as { id: string }).id;
    const running = await waitFor(async () => (await rt.fanout.listItems(lapsedId, { status: 'running', limit: 1 })).rows[0], { message: 'the blocking item running' });
    await rt.db.pool.query(
      `WITH other AS (SELECT gen_random_uuid() AS token),
       taken AS (UPDATE fanout_item SET claim_token = (SELECT token FROM other) WHERE id = $1 RETURNING task_id)
       INSERT INTO fanout_claim (token, kind, tenant, item_ids, lease_until)
       SELECT other.token, t.kind, COALESCE(t.tenant, ''), ARRAY[$1::uuid], now() FROM other, taken JOIN fanout_task t ON t.id = taken.task_id`,
      [running.id],
    );
    await waitFor(async () => sumOf(await otel.metrics(), METRIC.leasesLost, def) - sumOf(before, METRIC.leasesLost, def) === 1, { message: 'the lost lease counted' });
    const requeued = { [ATTR.recovery]: 'lapsed_requeued' };
    await waitFor(async () => {
      await rt.fanout.runMaintenance();
      return sumOf(await otel.metrics(), METRIC.recoveries, requeued) - sumOf(before, METRIC.recoveries, requeued) === 1;
    }, { message: 'the lapsed claim recovered', timeoutMs: 15_000 });
    // Each is logged with the ids of the item: the lost claim by the live worker, the recovery by the loop.
    expect(lines.find((l) => typeof l.msg === 'string' && l.msg.startsWith('lost the claim of an item'))).toMatchObject({ definition: 'kit_flaky', taskId: lapsedId, itemId: running.id, attempt: 1 });
    expect(lines.find((l) => l.msg === 'a lapsed item goes back to pending')).toMatchObject({ definition: 'kit_flaky', taskId: lapsedId, itemId: running.id, attempt: 1, recovery: 'requeued' });
    await rt.fanout.cancel(lapsedId);
    await finished(lapsedId);
  });

  it("a retry of failed items over HTTP is a trace of its own: the new round's items continue the retry request, not the submit", async () => {
    const id = await submit({ count: 3, permanent: ['n1'] }, { traceparent: `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01` });
    const first = await finished(id);
    expect(first).toMatchObject({ failed: 1 });
    const failedItem = (await rt.fanout.listItems(id, { status: 'failed', limit: 1 })).rows[0]!;
    const retryTrace = randomBytes(16).toString('hex');
    const res = await fetch(`${server.url}/api/flaky/tasks/${id}/retry-failed`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_TOKEN.a}`, 'content-type': 'application/json', traceparent: `00-${retryTrace}-${randomBytes(8).toString('hex')}-01` },
      body: '{}',
    });
    expect(res.status).toBe(202);
    await waitFor(async () => ((await rt.fanout.getTask(id))?.round === 2 ? finished(id) : null), { message: 'the second round to finish' });
    const inRetry = await waitFor(() => {
      const spans = otel.spans().filter((s) => s.spanContext().traceId === retryTrace);
      return spans.some((s) => s.name === SPAN.item) ? spans : null;
    }, { message: "the new round's item span in the retry's trace" });
    const request = inRetry.find((s) => s.kind === SpanKind.SERVER)!;
    const retrySpan = inRetry.find((s) => s.name === SPAN.retryFailed)!;
    expect(parentOf(retrySpan)).toBe(idOf(request));
    expect(retrySpan.attributes).toMatchObject({ [ATTR.taskId]: id, [ATTR.retried]: 1 });
    const item = inRetry.find((s) => s.name === SPAN.item)!;
    expect(item.attributes[ATTR.itemId]).toBe(failedItem.id);
    expect(parentOf(item)).toBe(idOf(retrySpan));
  });

  it('a failing read of the task gauges leaves every other metric collected', async () => {
    let failing = true;
    let reads = 0;
    rt.fanout.telemetry.metrics.addGauges(async () => {
      reads++;
      if (failing) throw new Error('the database is unreachable');
    });
    try {
      const before = await otel.metrics();
      const id = await submit({ count: 2, permanent: ['n0'] });
      await finished(id);
      const after = await otel.metrics();
      expect(reads).toBe(2);
      // The counts kept in memory are collected all the same (they were not, when one callback read both).
      const where = { [ATTR.definition]: 'kit_flaky', [ATTR.outcome]: 'failed', [ATTR.errorType]: 'malformed' };
      expect(sumOf(after, METRIC.itemsSettled, where) - sumOf(before, METRIC.itemsSettled, where)).toBe(1);
      expect(sumOf(after, METRIC.tasksSubmitted, { [ATTR.definition]: 'kit_flaky' }) - sumOf(before, METRIC.tasksSubmitted, { [ATTR.definition]: 'kit_flaky' })).toBe(1);
    } finally {
      failing = false;
    }
  });

  it('the task gauges read every running task: one past its deadline behind hundreds of newer ones is counted', async () => {
    const def = { [ATTR.definition]: 'kit_flaky' };
    // Rows as a busy platform has them (no manager or worker touches them: the maintenance loop is off here).
    const { rows } = await rt.db.pool.query<{ id: string }>(
      `INSERT INTO fanout_task (id, kind, tenant, input, status, started_at, created_at, deadline_at, total)
       SELECT gen_random_uuid(), 'kit_flaky', 'team-a', '{}', 'running', now(), now() - interval '1 hour' + g * interval '1 second',
              CASE WHEN g = 0 THEN now() - interval '1 minute' END, 1
       FROM generate_series(0, 1200) g RETURNING id`,
    );
    try {
      expect(rows).toHaveLength(1201);
      const now = await otel.metrics();
      expect(sumOf(now, METRIC.tasksOverdue, def)).toBe(1);
      expect(sumOf(now, METRIC.tasksActive, { ...def, [ATTR.taskStatus]: 'running' })).toBe(1201);
      expect((await rt.fanout.operations()).attention?.overdue).toHaveLength(1);
    } finally {
      await rt.db.pool.query('DELETE FROM fanout_task WHERE id = ANY($1::uuid[])', [rows.map((r) => r.id)]);
    }
  });
});
