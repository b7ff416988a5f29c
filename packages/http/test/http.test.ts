import { taskRoutes } from '@fanout/http';
import { collectEventStream, TaskEventSubscriber } from '@fanout/sse-pg';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revoked } from './fixtures/definition.ts';
import { testApp, waitFor, type TestApp } from './fixtures/test-app.ts';

const TOKENS: Record<string, string> = { 'token-a': 'tenant-a', 'token-b': 'tenant-b' };

let t: TestApp;
let subscriber: TaskEventSubscriber;
const http = new Hono();

beforeAll(async () => {
  t = await testApp({ work: true });
  subscriber = new TaskEventSubscriber({ connectionString: t.db.url });
  await subscriber.start();
  http.route(
    '/api/test',
    taskRoutes({
      fanout: t.app.fanout,
      definition: t.app.fanout.definition('test_batch'),
      authenticate: (token) => (TOKENS[token] ? { tenant: TOKENS[token]! } : null),
      subscriber,
      basePath: '/api/test',
    }),
  );
});

afterAll(async () => {
  await subscriber?.close();
  await t?.[Symbol.asyncDispose]();
});

const call = (method: string, path: string, options: { token?: string | null; body?: unknown; raw?: string; headers?: Record<string, string> } = {}) => {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== null) headers.authorization = `Bearer ${options.token ?? 'token-a'}`;
  if (options.body !== undefined || options.raw !== undefined) headers['content-type'] = 'application/json';
  return http.request(`/api/test${path}`, { method, headers, ...(options.raw !== undefined ? { body: options.raw } : options.body !== undefined ? { body: JSON.stringify(options.body) } : {}) });
};

/**
 * Every route the served OpenAPI document says needs a token, with `{id}` filled in: the tests
 * below cover what the API documents, so a new route is covered as soon as it is documented.
 */
async function tokenRoutes(id: string, itemId = '00000000-0000-4000-8000-000000000000'): Promise<[string, string][]> {
  const document = (await (await call('GET', '/openapi.json', { token: null })).json()) as {
    paths: Record<string, Record<string, { security?: unknown[] }>>;
  };
  return Object.entries(document.paths).flatMap(([path, operations]) =>
    Object.entries(operations)
      .filter(([, operation]) => operation.security?.length !== 0)
      .map(([method]): [string, string] => [method.toUpperCase(), path.replace('/api/test', '').replace('{id}', id).replace('{itemId}', itemId)]),
  );
}

async function submit(input: object, token = 'token-a'): Promise<string> {
  const res = await call('POST', '/tasks', { token, body: { input } });
  expect(res.status).toBe(202);
  const body = (await res.json()) as { id: string; status: string };
  expect(body.status).toBe('queued');
  return body.id;
}

async function ended(id: string, token = 'token-a') {
  return waitFor(async () => {
    const body = (await (await call('GET', `/tasks/${id}`, { token })).json()) as { status: string };
    return ['completed', 'failed', 'cancelled'].includes(body.status) ? body : null;
  }, { message: `task ${id} ended` });
}

describe('shared HTTP layer', () => {
  it('serves health, readiness and an OpenAPI document without a token', async () => {
    expect(await (await call('GET', '/healthz', { token: null })).json()).toEqual({ ok: true });
    const ready = await call('GET', '/readyz', { token: null });
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ ok: true, checks: { database: 'ok', queue: 'ok' } });
    const doc = (await (await call('GET', '/openapi.json', { token: null })).json()) as { openapi: string; paths: Record<string, Record<string, any>> };
    expect(doc.openapi).toBe('3.0.3');
    expect(Object.keys(doc.paths).sort()).toEqual(
      [
        '/events',
        '/healthz',
        '/me',
        '/openapi.json',
        '/ops',
        '/readyz',
        '/tasks',
        '/tasks/summary',
        '/tasks/{id}',
        '/tasks/{id}/archive',
        '/tasks/{id}/cancel',
        '/tasks/{id}/counts',
        '/tasks/{id}/events',
        '/tasks/{id}/failures',
        '/tasks/{id}/failures.csv',
        '/tasks/{id}/items',
        '/tasks/{id}/items/{itemId}',
        '/tasks/{id}/items/{itemId}/logs',
        '/tasks/{id}/items/{itemId}/retry',
        '/tasks/{id}/retry-failed',
      ]
        .map((p) => `/api/test${p}`)
        .sort(),
    );
    // The submit body is the definition's own input schema.
    const body = doc.paths['/api/test/tasks']!.post.requestBody.content['application/json'].schema;
    expect(body.properties.input.properties.count).toMatchObject({ type: 'integer', minimum: 0 });
  });

  it('runs a task end to end: submit, read, list, page items with failure reasons', async () => {
    const id = await submit({ count: 12, every: 4, special: { permanent: true } });
    const task = await ended(id);
    expect(task).toMatchObject({ id, status: 'completed', total: 12, succeeded: 9, failed: 3, cancelled: 0 });
    expect(Object.keys(task).sort()).toEqual(
      [
        'archivedAt',
        'cancelled',
        'completedAt',
        'createdAt',
        'deadlineAt',
        'dispatchCut',
        'dispatched',
        'error',
        'failed',
        'id',
        'kind',
        'priority',
        'purgedAt',
        'round',
        'roundSettledAtStart',
        'roundStartedAt',
        'startedAt',
        'status',
        'stopReason',
        'succeeded',
        'summary',
        'total',
      ].sort(),
    );
    const list = (await (await call('GET', '/tasks?limit=100')).json()) as { tasks: { id: string }[] };
    expect(list.tasks.map((x) => x.id)).toContain(id);
    const first = (await (await call('GET', `/tasks/${id}/items?limit=5`)).json()) as { items: { seq: number }[]; nextCursor: string };
    expect(first.items.map((i) => i.seq)).toEqual([1, 2, 3, 4, 5]);
    const second = (await (await call('GET', `/tasks/${id}/items?limit=5&cursor=${first.nextCursor}`)).json()) as { items: { seq: number }[] };
    expect(second.items.map((i) => i.seq)).toEqual([6, 7, 8, 9, 10]);
    const failed = (await (await call('GET', `/tasks/${id}/items?status=failed`)).json()) as { items: { key: string; error: { code: string; message: string } }[] };
    expect(failed.items.map((i) => [i.key, i.error.code, i.error.message])).toEqual([
      ['item-0', 'corrupt', 'corrupt input'],
      ['item-4', 'corrupt', 'corrupt input'],
      ['item-8', 'corrupt', 'corrupt input'],
    ]);
  });

  it('cancels, answers 409 for a finished task, and retries failed items', async () => {
    const running = await submit({ count: 50, item: { sleepMs: 20_000 } });
    await waitFor(async () => ((await (await call('GET', `/tasks/${running}`)).json()) as { dispatched: boolean }).dispatched, { message: 'dispatched' });
    const cancel = await call('POST', `/tasks/${running}/cancel`);
    expect(cancel.status).toBe(200);
    expect(((await cancel.json()) as { status: string }).status).toMatch(/stopping|cancelled/);
    expect(await ended(running)).toMatchObject({ status: 'cancelled', cancelled: 50 });
    const again = await call('POST', `/tasks/${running}/cancel`);
    expect(again.status).toBe(409);
    expect(((await again.json()) as { error: { code: string } }).error.code).toBe('conflict');

    const flaky = await submit({ count: 6, every: 3, special: { permanent: true, permanentUntilRound: 2 } });
    expect(await ended(flaky)).toMatchObject({ failed: 2 });
    const retry = await call('POST', `/tasks/${flaky}/retry-failed`, { body: {} });
    expect(retry.status).toBe(202);
    expect(await retry.json()).toMatchObject({ retried: 2, task: { round: 2, failed: 0 } });
    expect(await ended(flaky)).toMatchObject({ status: 'completed', succeeded: 6, failed: 0, round: 2 });
    expect((await call('POST', `/tasks/${flaky}/retry-failed`)).status).toBe(409);
  });

  it('streams events of the caller’s task, state first', async () => {
    const id = await submit({ count: 3 });
    await ended(id);
    const res = await call('GET', `/tasks/${id}/events`);
    expect(res.status).toBe(200);
    const sse = collectEventStream(res.body!);
    await waitFor(() => sse.messages.length === 1, { message: 'the final state' });
    expect(sse.messages[0]).toMatchObject({ event: 'task.completed', data: { counts: { succeeded: 3 } } });
    await sse.cancel();
  });

  it("answers 404 on every route for another tenant's task, and lists only the caller's tasks", async () => {
    const id = await submit({ count: 2 }, 'token-a');
    await ended(id);
    const [item] = ((await (await call('GET', `/tasks/${id}/items?limit=1`)).json()) as { items: { id: string }[] }).items;
    const routes = (await tokenRoutes(id, item!.id)).filter(([, path]) => path.includes(id));
    expect(routes).toHaveLength(13);
    for (const [method, path] of routes) {
      const res = await call(method, path, { token: 'token-b' });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(await res.json()).toEqual({ error: { code: 'not_found', message: `task ${id} not found` } });
    }
    const list = (await (await call('GET', '/tasks', { token: 'token-b' })).json()) as { tasks: { id: string }[] };
    expect(list.tasks.map((x) => x.id)).not.toContain(id);
  });

  it('refuses requests without a valid bearer token on every task route', async () => {
    const id = await submit({ count: 1 });
    const routes = await tokenRoutes(id);
    expect(routes).toHaveLength(19);
    for (const [method, path] of routes) {
      const missing = await call(method, path, { token: null });
      expect(missing.status, `${method} ${path}`).toBe(401);
      expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
      expect((await call(method, path, { token: 'forged' })).status).toBe(401);
    }
  });

  it('answers a method a path does not take with 405 and the methods it takes', async () => {
    const id = await submit({ count: 1 });
    for (const [method, path, allow] of [
      ['PUT', '/tasks', 'POST, GET, HEAD'],
      ['PATCH', `/tasks/${id}`, 'GET, DELETE, HEAD'],
      ['GET', `/tasks/${id}/cancel`, 'POST'],
    ] as const) {
      const res = await call(method, path);
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.headers.get('allow'), `${method} ${path}`).toBe(allow);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('method_not_allowed');
    }
  });

  it('answers bad input with 400, naming the field and the rule, on every route', async () => {
    const id = await submit({ count: 1 });
    const cases: Array<[string, string, { raw?: string; body?: unknown }, string, string]> = [
      ['POST', '/tasks', { raw: '{not json' }, 'body', 'invalid_json'],
      ['POST', '/tasks', { body: { input: { count: -1 } } }, 'body.input.count', 'too_small'],
      ['POST', '/tasks', { body: { input: { count: 'ten' } } }, 'body.input.count', 'invalid_type'],
      ['POST', '/tasks', { body: { input: { count: 1 }, extra: true } }, 'body', 'unrecognized_keys'],
      ['POST', '/tasks', { body: { input: { count: 1 }, options: { maxFailureRatio: 2 } } }, 'body.options.maxFailureRatio', 'too_big'],
      ['POST', '/tasks', { body: { input: { count: 1, requires: ['tenant-a:\u0000'] } } }, 'body.input.requires.0', 'nul_character'],
      // The definition's checkInput, against what the tenant has.
      ['POST', '/tasks', { body: { input: { count: 1, requires: ['tenant-a:x', 'tenant-b:y'] } } }, 'body.input.requires.1', 'not_found'],
      ['GET', '/tasks?limit=0', {}, 'query.limit', 'too_small'],
      ['GET', '/tasks?limit=abc', {}, 'query.limit', 'invalid_type'],
      ['GET', '/tasks?status=done', {}, 'query.status', 'invalid_value'],
      ['GET', '/tasks?cursor=garbage', {}, 'query.cursor', 'invalid_cursor'],
      ['GET', `/tasks?cursor=${Buffer.from(JSON.stringify(['garbage', id])).toString('base64url')}`, {}, 'query.cursor', 'invalid_cursor'],
      ['GET', `/tasks/${id}/items?cursor=${Buffer.from(JSON.stringify([2 ** 40, id])).toString('base64url')}`, {}, 'query.cursor', 'invalid_cursor'],
      ['GET', '/tasks/not-a-uuid', {}, 'params.id', 'invalid_format'],
      ['GET', `/tasks/${id}/items?status=nope`, {}, 'query.status', 'invalid_value'],
      ['GET', `/tasks/${id}/items?cursor=garbage`, {}, 'query.cursor', 'invalid_cursor'],
      ['GET', '/tasks/not-a-uuid/items', {}, 'params.id', 'invalid_format'],
      ['GET', '/tasks/not-a-uuid/events', {}, 'params.id', 'invalid_format'],
      ['POST', '/tasks/not-a-uuid/cancel', {}, 'params.id', 'invalid_format'],
      ['POST', `/tasks/${id}/retry-failed`, { body: { deadlineMs: -5 } }, 'body.deadlineMs', 'too_small'],
      // A parameter a route does not take, also on a route that takes none.
      ['GET', `/tasks?foo=1`, {}, 'query', 'unrecognized_keys'],
      ['GET', `/tasks/${id}?foo=1`, {}, 'query', 'unrecognized_keys'],
      ['POST', `/tasks/${id}/cancel?force=1`, {}, 'query', 'unrecognized_keys'],
    ];
    for (const [method, path, options, field, rule] of cases) {
      const res = await call(method, path, options);
      expect(res.status, `${method} ${path}`).toBe(400);
      const body = (await res.json()) as { error: { code: string; message: string; issues: { field: string; rule: string }[] } };
      expect(body.error.issues, `${method} ${path}`).toContainEqual(expect.objectContaining({ field, rule }));
      expect(body.error.message).toContain(field);
    }
    // Nothing was stored by the refused submissions.
    const list = (await (await call('GET', '/tasks?limit=200')).json()) as { tasks: unknown[] };
    const count = list.tasks.length;
    await call('POST', '/tasks', { body: { input: { count: -1 } } });
    const refused = await call('POST', '/tasks', { body: { input: { count: 1, requires: ['tenant-b:y', 'z'] } }, headers: { 'idempotency-key': 'refused-at-submit' } });
    expect(await refused.json()).toEqual({
      error: {
        code: 'invalid_request',
        message: 'body.input.requires.0: no tenant-b:y of yours (not_found)',
        issues: [
          { field: 'body.input.requires.0', rule: 'not_found', message: 'no tenant-b:y of yours' },
          { field: 'body.input.requires.1', rule: 'not_found', message: 'no z of yours' },
        ],
      },
    });
    expect(((await (await call('GET', '/tasks?limit=200')).json()) as { tasks: unknown[] }).tasks).toHaveLength(count);
    // Through the SDK: one FanoutError naming the first problem and carrying them all; a tenant's own passes.
    const error = await t.app.fanout.submit('test_batch', { count: 1, requires: ['tenant-a:x', 'tenant-b:y'] }, { tenant: 'tenant-a' }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'FanoutError', code: 'invalid_argument', field: 'input.requires.1', issues: [{ field: 'input.requires.1', rule: 'not_found', message: 'no tenant-b:y of yours' }] });
    expect((await call('POST', '/tasks', { token: 'token-b', body: { input: { count: 1, requires: ['tenant-b:y'] } } })).status).toBe(202);
    // A replay of a key is not checked again: what it named may be gone since, it answers its task.
    const keyed = { token: 'token-b', body: { input: { count: 1, requires: ['tenant-b:z'] } }, headers: { 'idempotency-key': 'checked-once' } };
    const first = await call('POST', '/tasks', keyed);
    expect(first.status).toBe(202);
    revoked.add('tenant-b:z');
    const replay = await call('POST', '/tasks', keyed);
    expect(replay.status).toBe(202);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(((await replay.json()) as { id: string }).id).toBe(((await first.json()) as { id: string }).id);
    // The same key with other input is still a conflict; a new key is checked.
    expect((await call('POST', '/tasks', { ...keyed, body: { input: { count: 2, requires: ['tenant-b:z'] } } })).status).toBe(409);
    expect((await call('POST', '/tasks', { ...keyed, headers: { 'idempotency-key': 'checked-twice' } })).status).toBe(400);
  });

  it('answers 404 with JSON for an unknown task and an unknown route', async () => {
    const res = await call('GET', '/tasks/00000000-0000-4000-8000-000000000000');
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('not_found');
    expect((await call('GET', '/nothing-here')).status).toBe(404);
  });
});
