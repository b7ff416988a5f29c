import { randomUUID } from 'node:crypto';
import type { AnyFanoutDefinition, Fanout, ItemRecord, Logger, TaskRecord } from '@fanout/core';
import { taskEventsHandler, taskState, type TaskEventSubscriber } from '@fanout/sse-pg';
import { Hono, type Context } from 'hono';
import { z } from 'zod';
import { errorResponse, HttpError, validationError } from './errors.ts';
import { openApiDocument, type RouteDoc } from './openapi.ts';
import {
  errorSchema,
  healthSchema,
  itemPageSchema,
  listItemsQuery,
  listTasksQuery,
  retriedSchema,
  retryFailedBody,
  submitOptionsSchema,
  submittedSchema,
  taskIdParams,
  taskPageSchema,
  taskViewSchema,
  type TaskView,
} from './schemas.ts';

export interface Principal {
  tenant: string;
}

export interface TaskRoutesOptions {
  fanout: Fanout;
  /** The fan-out these routes submit. Its input schema is the body of `POST /tasks`. */
  definition: AnyFanoutDefinition;
  /** Resolves a bearer token to its tenant; null refuses it (401). */
  authenticate(token: string): Promise<Principal | null> | Principal | null;
  /** Streams `GET /tasks/:id/events`; without it the route answers 404. */
  subscriber?: TaskEventSubscriber;
  /** Extra readiness checks for `/readyz` (throw to report not ready). */
  ready?: () => Promise<void>;
  /** The path this router is mounted at, for the OpenAPI document. @default '' */
  basePath?: string;
  title?: string;
  logger?: Logger;
}

/** The Hono environment of authenticated routes: `c.get('principal')`. */
export type AuthEnv = { Variables: { principal: Principal } };
type Env = AuthEnv;

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function taskView(task: TaskRecord): TaskView {
  return {
    id: task.id,
    kind: task.kind,
    status: task.status,
    stopReason: task.stopReason,
    error: task.error,
    total: task.total,
    succeeded: task.succeeded,
    failed: task.failed,
    cancelled: task.cancelled,
    round: task.round,
    dispatched: task.dispatchedAt !== null,
    createdAt: task.createdAt.toISOString(),
    startedAt: iso(task.startedAt),
    completedAt: iso(task.completedAt),
  };
}

function itemView(item: ItemRecord) {
  return {
    id: item.id,
    key: item.key,
    seq: item.seq,
    status: item.status,
    attempts: item.attempts,
    round: item.round,
    snapshot: item.snapshot,
    result: item.result,
    error: item.error,
    startedAt: iso(item.startedAt),
    finishedAt: iso(item.finishedAt),
  };
}

/** Validates a request part; a mistake is a 400 naming the field and the rule. */
export function parseRequest<T extends z.ZodType>(schema: T, value: unknown, where: 'body' | 'query' | 'params'): z.output<T> {
  const result = schema.safeParse(value);
  if (!result.success) throw validationError(where, result.error);
  return result.data;
}

async function jsonBody(c: Context): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, 'invalid_request', 'body: not valid JSON', [{ field: 'body', rule: 'invalid_json', message: 'not valid JSON' }]);
  }
}

/**
 * The task routes every Fanout app serves, for one definition: submit, list, read, items,
 * events (SSE), cancel, retry-failed, plus `/healthz`, `/readyz` and `/openapi.json`. Every
 * task route needs a bearer token; a task of another tenant answers 404 exactly like an unknown
 * one. Mount it under the app's prefix: `app.route('/api/asl', taskRoutes({ … }))`.
 */
export function taskRoutes(options: TaskRoutesOptions): Hono<Env> {
  const { fanout, definition } = options;
  const log = (message: string, data: Record<string, unknown>) => options.logger?.error(message, data);
  const app = new Hono<Env>();
  app.onError((error, c) => errorResponse(c, error, log));
  app.notFound((c) => c.json({ error: { code: 'not_found', message: `no route ${c.req.method} ${c.req.path}` } }, 404));

  const submitBody = z.object({ input: definition.input, options: submitOptionsSchema.optional() }).strict();
  const docs: RouteDoc[] = [];
  const doc = (route: RouteDoc) => docs.push(route);

  // -- unauthenticated -------------------------------------------------------------------------
  doc({ method: 'get', path: '/healthz', summary: 'The process is up', responses: { 200: healthSchema }, auth: false });
  app.get('/healthz', (c) => c.json({ ok: true }));

  doc({ method: 'get', path: '/readyz', summary: 'The database and the queue are reachable', responses: { 200: healthSchema, 503: healthSchema }, auth: false });
  app.get('/readyz', async (c) => {
    const checks: Record<string, string> = {};
    const check = async (name: string, fn: () => Promise<unknown>) => {
      try {
        await fn();
        checks[name] = 'ok';
      } catch (error) {
        // The reason goes to the log, not to whoever asks (it may name hosts or users).
        checks[name] = 'failed';
        options.logger?.warn('readiness check failed', { check: name, error: (error as Error).message });
      }
    };
    await check('database', () => fanout.store.getTask(randomUUID()));
    await check('queue', async () => {
      if (!(await fanout.boss.getQueue(definition.childQueue))) throw new Error(`queue ${definition.childQueue} is missing`);
    });
    if (options.ready) await check('app', options.ready);
    const ok = Object.values(checks).every((v) => v === 'ok');
    return c.json({ ok, checks }, ok ? 200 : 503);
  });

  doc({ method: 'get', path: '/openapi.json', summary: 'This document', responses: { 200: z.object({}).passthrough() }, auth: false });
  app.get('/openapi.json', (c) => c.json(openApiDocument({ title: options.title ?? `${definition.name} tasks`, basePath: options.basePath ?? '', routes: docs })));

  // -- authenticated ---------------------------------------------------------------------------
  app.use('/tasks', bearerAuth(options.authenticate));
  app.use('/tasks/*', bearerAuth(options.authenticate));

  const ownTask = (c: Context<Env>) => ownedTask(c, fanout, definition);

  doc({ method: 'post', path: '/tasks', summary: 'Start a task', body: submitBody, responses: { 202: submittedSchema, 400: errorSchema, 401: errorSchema } });
  app.post('/tasks', async (c) => {
    const body = parseRequest(submitBody, await jsonBody(c), 'body');
    const task = await fanout.submit(definition, body.input, { ...body.options, tenant: c.get('principal').tenant });
    return c.json({ id: task.id, status: task.status }, 202);
  });

  doc({ method: 'get', path: '/tasks', summary: "The tenant's tasks, newest first", query: listTasksQuery, responses: { 200: taskPageSchema, 400: errorSchema, 401: errorSchema } });
  app.get('/tasks', async (c) => {
    const query = parseRequest(listTasksQuery, c.req.query(), 'query');
    const page = await fanout.listTasks({ kind: definition.name, tenant: c.get('principal').tenant, limit: query.limit, cursor: query.cursor ?? null, ...(query.status ? { status: query.status } : {}) });
    return c.json({ tasks: page.rows.map(taskView), nextCursor: page.nextCursor });
  });

  doc({ method: 'get', path: '/tasks/{id}', summary: 'A task with its counts', params: taskIdParams, responses: { 200: taskViewSchema, 400: errorSchema, 401: errorSchema, 404: errorSchema } });
  app.get('/tasks/:id', async (c) => c.json(taskView(await ownTask(c))));

  doc({ method: 'get', path: '/tasks/{id}/items', summary: "A task's items, in dispatch order, with failure reasons", params: taskIdParams, query: listItemsQuery, responses: { 200: itemPageSchema, 400: errorSchema, 401: errorSchema, 404: errorSchema } });
  app.get('/tasks/:id/items', async (c) => {
    const task = await ownTask(c);
    const query = parseRequest(listItemsQuery, c.req.query(), 'query');
    const page = await fanout.listItems(task.id, { limit: query.limit, cursor: query.cursor ?? null, ...(query.status ? { status: query.status } : {}) });
    return c.json({ items: page.rows.map(itemView), nextCursor: page.nextCursor });
  });

  doc({ method: 'get', path: '/tasks/{id}/events', summary: 'Live progress (Server-Sent Events): the current state first, then events; Last-Event-ID resumes', params: taskIdParams, responses: { 200: z.string(), 401: errorSchema, 404: errorSchema } });
  if (options.subscriber) {
    const events = taskEventsHandler({
      subscriber: options.subscriber,
      loadTask: async (id) => {
        const t = await fanout.getTask(id);
        return t && t.kind === definition.name ? taskState(t) : null;
      },
      authorize: (c, task) => task.tenant === (c as Context<Env>).get('principal').tenant,
      notFound: (c) => c.json({ error: { code: 'not_found', message: `task ${c.req.param('id')} not found` } }, 404),
    });
    app.get('/tasks/:id/events', (c) => {
      parseRequest(taskIdParams, c.req.param(), 'params');
      return events(c);
    });
  }

  doc({ method: 'post', path: '/tasks/{id}/cancel', summary: 'Cancel a queued or running task', params: taskIdParams, responses: { 200: taskViewSchema, 401: errorSchema, 404: errorSchema, 409: errorSchema } });
  app.post('/tasks/:id/cancel', async (c) => {
    const task = await ownTask(c);
    await fanout.cancel(task.id);
    return c.json(taskView((await fanout.getTask(task.id))!));
  });

  doc({ method: 'post', path: '/tasks/{id}/retry-failed', summary: 'Re-run the failed items of a finished task', params: taskIdParams, body: retryFailedBody, responses: { 202: retriedSchema, 400: errorSchema, 401: errorSchema, 404: errorSchema, 409: errorSchema } });
  app.post('/tasks/:id/retry-failed', async (c) => {
    const task = await ownTask(c);
    const body = parseRequest(retryFailedBody, await jsonBody(c), 'body');
    const result = await fanout.retryFailed(task.id, body.deadlineMs === undefined ? {} : { deadlineMs: body.deadlineMs });
    return c.json({ retried: result.retried, task: taskView(result.task) }, 202);
  });

  return app;
}

/**
 * The task of route parameter `id`, when it is of this definition and the caller's tenant.
 * Another tenant's task is answered exactly like a missing one (404): ids cannot be probed.
 */
export async function ownedTask(c: Context<Env>, fanout: Fanout, definition: AnyFanoutDefinition): Promise<TaskRecord> {
  const { id } = parseRequest(taskIdParams, c.req.param(), 'params');
  const task = await fanout.getTask(id);
  if (!task || task.kind !== definition.name || task.tenant !== c.get('principal').tenant) {
    throw new HttpError(404, 'not_found', `task ${id} not found`);
  }
  return task;
}

/** Middleware: a bearer token resolved to its principal, or a 401. */
export function bearerAuth(authenticate: TaskRoutesOptions['authenticate']) {
  return async (c: Context<Env>, next: () => Promise<void>) => {
    const header = c.req.header('authorization') ?? '';
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    if (!match) throw new HttpError(401, 'unauthorized', 'authorization: a bearer token is required (Authorization: Bearer <token>)');
    const principal = await authenticate(match[1]!);
    if (!principal) throw new HttpError(401, 'unauthorized', 'authorization: the token is not valid');
    c.set('principal', principal);
    await next();
  };
}
