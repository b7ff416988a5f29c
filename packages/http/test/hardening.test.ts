import { FanoutError } from '@fanout/core';
import { collectEventStream, TaskEventSubscriber } from '@fanout/sse-pg';
import { Hono } from 'hono';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorResponse, route, taskRoutes, type Principal } from '../src/index.ts';
import { testApp, waitFor, type TestApp } from './fixtures/test-app.ts';

// What hostile or careless clients send: numbers past what the database holds, cursors of
// impossible times, large bodies, guessed tokens, many streams; and what an operator needs when
// something breaks: a 500 logged once with an id the client also has.
const PRINCIPALS: Record<string, Principal> = { 'token-a': { tenant: 'tenant-a' }, 'token-b': { tenant: 'tenant-b' } };
const BODY_LIMIT = 64 * 1024;

let t: TestApp;
let subscriber: TaskEventSubscriber;
const logged: { message: string; data?: Record<string, unknown> }[] = [];
const http = new Hono();

beforeAll(async () => {
  t = await testApp({ work: true });
  subscriber = new TaskEventSubscriber({ connectionString: t.db.url });
  await subscriber.start();
  const record = (message: string, data?: Record<string, unknown>) => void logged.push({ message, ...(data ? { data } : {}) });
  http.route(
    '/api/test',
    taskRoutes({
      fanout: t.app.fanout,
      definition: t.app.fanout.definition('test_batch'),
      authenticate: (token) => PRINCIPALS[token] ?? null,
      subscriber,
      basePath: '/api/test',
      bodyLimitBytes: BODY_LIMIT,
      failedAttempts: { limit: 5, windowMs: 60_000 },
      streamsPerTenant: 2,
      logger: { debug: record, info: record, warn: record, error: record },
      routes: [
        route({
          method: 'get',
          path: '/broken',
          summary: 'Fails like a database outage',
          responses: { 200: z.object({}) },
          handler: () => {
            throw Object.assign(new Error('connection terminated unexpectedly'), { code: '57P01' });
          },
        }),
      ],
    }),
  );
});

afterAll(async () => {
  await subscriber?.close();
  await t?.[Symbol.asyncDispose]();
});

type Json = any;
const call = (method: string, path: string, options: { token?: string | null; body?: unknown; raw?: string | ReadableStream<Uint8Array>; headers?: Record<string, string>; client?: string } = {}) => {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== null) headers.authorization = `Bearer ${options.token ?? 'token-a'}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const body = options.raw ?? (options.body !== undefined ? JSON.stringify(options.body) : undefined);
  // The connection's address, as @hono/node-server gives it.
  const env = { incoming: { socket: { remoteAddress: options.client ?? '192.0.2.1' } } };
  return http.request(`/api/test${path}`, { method, headers, ...(body !== undefined ? { body, duplex: 'half' } : {}) } as RequestInit, env);
};

async function expectIssue(res: Response, status: number, field: string, rule: string) {
  expect(res.status, `${field} ${rule}`).toBe(status);
  const body = (await res.json()) as Json;
  expect(body.error.issues).toContainEqual(expect.objectContaining({ field, rule }));
  expect(body.error.message).toContain(field);
}

async function finishedTask(): Promise<string> {
  const res = await call('POST', '/tasks', { body: { input: { count: 2, every: 2, special: { permanent: true } } } });
  const { id } = (await res.json()) as Json;
  await waitFor(async () => ['completed', 'failed'].includes(((await (await call('GET', `/tasks/${id}`)).json()) as Json).status), { message: 'the task ended' });
  return id;
}

describe('hardened HTTP layer', () => {
  it('answers numbers past what the store holds with 400 naming the field, on submit and both retries', async () => {
    const id = await finishedTask();
    const [item] = ((await (await call('GET', `/tasks/${id}/items?status=failed`)).json()) as Json).items;
    for (const maxFailures of [3_000_000_000, 2 ** 53 - 1]) {
      await expectIssue(await call('POST', '/tasks', { body: { input: { count: 1 }, options: { maxFailures } } }), 400, 'body.options.maxFailures', 'too_big');
    }
    await expectIssue(await call('POST', '/tasks', { body: { input: { count: 1 }, options: { deadlineMs: 9e15 } } }), 400, 'body.options.deadlineMs', 'too_big');
    await expectIssue(await call('POST', `/tasks/${id}/retry-failed`, { body: { deadlineMs: 9e15 } }), 400, 'body.deadlineMs', 'too_big');
    await expectIssue(await call('POST', `/tasks/${id}/items/${item.id}/retry`, { body: { deadlineMs: 2 ** 53 - 1 } }), 400, 'body.deadlineMs', 'too_big');
    // The largest values allowed are served.
    const res = await call('POST', '/tasks', { body: { input: { count: 1 }, options: { maxFailures: 2 ** 31 - 1, deadlineMs: 365 * 24 * 3600_000 } } });
    expect(res.status).toBe(202);
  });

  it('answers a conflict that passes by itself (a task whose ending is being delivered) with 409 and Retry-After', async () => {
    const app = new Hono();
    app.onError((error, c) => errorResponse(c, error, () => {}));
    app.get('/passing', () => {
      throw new FanoutError('conflict', 'try again in a moment', { field: 'taskId', retryAfterMs: 1500 });
    });
    app.get('/final', () => {
      throw new FanoutError('conflict', 'already finished');
    });
    const passing = await app.request('/passing');
    expect(passing.status).toBe(409);
    expect(passing.headers.get('retry-after')).toBe('2');
    expect(await passing.json()).toMatchObject({ error: { code: 'conflict', message: 'try again in a moment' } });
    const final = await app.request('/final');
    expect(final.status).toBe(409);
    expect(final.headers.get('retry-after')).toBeNull();
  });

  it('answers cursors of times PostgreSQL cannot hold with 400, not 500', async () => {
    const id = '00000000-0000-4000-8000-000000000000';
    for (const time of ['-271821-04-20T00:00:00.000Z', '-004714-01-01T00:00:00.000Z', '+275760-09-13T00:00:00.000Z', '2026-13-45T00:00:00.000Z']) {
      const cursor = Buffer.from(JSON.stringify([time, id])).toString('base64url');
      await expectIssue(await call('GET', `/tasks?cursor=${cursor}`), 400, 'query.cursor', 'invalid_cursor');
    }
  });

  it('refuses a JSON body over the limit with 413 before buffering it, announced or chunked', async () => {
    const big = JSON.stringify({ input: { count: 1 }, padding: 'x'.repeat(BODY_LIMIT) });
    await expectIssue(await call('POST', '/tasks', { raw: big, headers: { 'content-type': 'application/json' } }), 413, 'body', 'too_big');
    // No Content-Length: the reading stops at the limit.
    let sent = 0;
    const chunked = new ReadableStream<Uint8Array>({
      pull(controller) {
        sent += 16 * 1024;
        controller.enqueue(new TextEncoder().encode(' '.repeat(16 * 1024)));
        if (sent > 100 * BODY_LIMIT) controller.close();
      },
    });
    await expectIssue(await call('POST', '/tasks', { raw: chunked, headers: { 'content-type': 'application/json' } }), 413, 'body', 'too_big');
    expect(sent).toBeLessThan(4 * BODY_LIMIT);
    // Under the limit, the same route works.
    expect((await call('POST', '/tasks', { body: { input: { count: 1 } } })).status).toBe(202);
  });

  it('sends the security headers on every answer: no framing, no sniffing, no caching of tenant data', async () => {
    const id = await finishedTask();
    const answers = await Promise.all([
      call('GET', '/tasks'),
      call('GET', `/tasks/${id}`),
      call('GET', `/tasks/${id}/failures.csv`),
      call('GET', '/healthz', { token: null }),
      call('GET', '/openapi.json', { token: null }),
      call('GET', '/tasks', { token: null }),
      call('GET', '/tasks/not-a-uuid'),
    ]);
    for (const res of answers) {
      expect(res.headers.get('content-security-policy'), res.url).toContain("frame-ancestors 'none'");
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
      await res.arrayBuffer();
    }
  });

  it('refuses a client that presented too many wrong tokens with 429 and Retry-After, even with a good token; other clients go on', async () => {
    const guesser = '198.51.100.7';
    for (let i = 0; i < 5; i++) expect((await call('GET', '/tasks', { token: `guess-${i}`, client: guesser })).status).toBe(401);
    const refused = await call('GET', '/tasks', { token: 'token-a', client: guesser });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect(((await refused.json()) as Json).error.code).toBe('too_many_requests');
    expect((await call('GET', '/tasks', { token: 'token-a', client: '198.51.100.8' })).status).toBe(200);
    // A missing token is not a guess: it is not counted.
    for (let i = 0; i < 10; i++) expect((await call('GET', '/tasks', { token: null, client: '198.51.100.9' })).status).toBe(401);
    expect((await call('GET', '/tasks', { client: '198.51.100.9' })).status).toBe(200);
  });

  it('counts refused tokens per client behind proxies of its own, and never trusts what a client writes in X-Forwarded-For', async () => {
    const { clientAddress } = await import('../src/index.ts');
    const at = async (headers: Record<string, string>, socket: string, hops: number) => {
      const app = new Hono();
      app.get('/', (c) => c.text(clientAddress(c, hops)));
      return (await app.request('/', { headers }, { incoming: { socket: { remoteAddress: socket } } })).text();
    };
    expect(await at({ 'x-forwarded-for': '203.0.113.9' }, '10.0.0.2', 0)).toBe('10.0.0.2');
    // One proxy: the address it appended (the client wrote the first one itself).
    expect(await at({ 'x-forwarded-for': '203.0.113.9, 198.51.100.20' }, '10.0.0.2', 1)).toBe('198.51.100.20');
    expect(await at({ 'x-forwarded-for': '203.0.113.9, 198.51.100.20, 10.0.0.1' }, '10.0.0.2', 2)).toBe('198.51.100.20');
    expect(await at({}, '10.0.0.2', 1)).toBe('10.0.0.2');
  });

  it('caps the live streams of a tenant (429 beyond), frees a place when one closes, and leaves other tenants alone', async () => {
    const first = collectEventStream((await call('GET', '/events')).body!);
    const secondRes = await call('GET', '/events');
    expect(secondRes.status).toBe(200);
    const second = collectEventStream(secondRes.body!);
    const third = await call('GET', '/events');
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).toBe('10');
    expect(((await third.json()) as Json).error.code).toBe('too_many_streams');
    const id = await finishedTask();
    expect((await call('GET', `/tasks/${id}/events`)).status).toBe(429);
    const other = await call('GET', '/events', { token: 'token-b' });
    expect(other.status).toBe(200);
    await other.body!.cancel();
    await first.cancel();
    const again = await waitFor(async () => {
      const res = await call('GET', '/events');
      if (res.status === 200) return res;
      await res.arrayBuffer();
      return null;
    }, { message: 'a place freed by the closed stream' });
    await again.body!.cancel();
    await second.cancel();
  });

  it('logs a 500 once with its message, code and request id, and answers that id (the client’s own when it sent one)', async () => {
    logged.length = 0;
    const res = await call('GET', '/broken', { headers: { 'x-request-id': 'req-4711' } });
    expect(res.status).toBe(500);
    expect(res.headers.get('x-request-id')).toBe('req-4711');
    expect(await res.json()).toEqual({ error: { code: 'internal', message: 'internal error (request req-4711)', requestId: 'req-4711' } });
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ message: 'request failed', data: { requestId: 'req-4711', method: 'GET', path: '/api/test/broken', error: 'connection terminated unexpectedly', errorCode: '57P01' } });
    // An id that could forge a log line is replaced.
    const forged = await call('GET', '/broken', { headers: { 'x-request-id': 'a b\u0007' } });
    const id = forged.headers.get('x-request-id')!;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(((await forged.json()) as Json).error.requestId).toBe(id);
    expect(logged[1]?.data?.requestId).toBe(id);
  });

  it('lists tasks without reading their input: a page of large batches costs what it shows', async () => {
    const tenant = 'tenant-big';
    const documentIds = Array.from({ length: 10_000 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
    const created = await t.app.fanout.store.createTask({ kind: 'test_batch', tenant, input: { documentIds }, maxAttempts: 1 }, async () => {});
    const page = await t.app.fanout.listTasks({ tenant, limit: 10 });
    expect(page.rows.map((r) => r.id)).toEqual([created.id]);
    expect(page.rows[0]!.input).toBeNull();
    expect(page.rows[0]).toMatchObject({ kind: 'test_batch', tenant, status: 'queued', total: 0 });
    // The task itself still has it.
    expect(((await t.app.fanout.getTask(created.id))!.input as { documentIds: string[] }).documentIds).toHaveLength(10_000);
  });

  it('documents every status a route answers: 400 on /events and /cancel, 413 on bodies, 401 and 429 on token routes, 500 everywhere', async () => {
    const doc = (await (await call('GET', '/openapi.json', { token: null })).json()) as Json;
    const statuses = (path: string, method: string) => Object.keys(doc.paths[`/api/test${path}`][method].responses).map(Number);
    expect(statuses('/events', 'get')).toEqual(expect.arrayContaining([200, 400, 401, 404, 429, 500]));
    expect(statuses('/tasks/{id}/cancel', 'post')).toEqual(expect.arrayContaining([200, 400, 401, 404, 409, 429, 500]));
    expect(statuses('/tasks', 'post')).toEqual(expect.arrayContaining([202, 400, 401, 409, 413, 429, 500]));
    expect(statuses('/ops', 'get')).toEqual(expect.arrayContaining([200, 401, 403, 429, 500]));
    expect(statuses('/healthz', 'get')).toEqual([200, 500]);
    const maxFailures = doc.paths['/api/test/tasks'].post.requestBody.content['application/json'].schema.properties.options.properties.maxFailures;
    expect(maxFailures).toMatchObject({ maximum: 2 ** 31 - 1 });
  });
});
