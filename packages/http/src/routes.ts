import { randomUUID } from 'node:crypto';
import { FanoutError, type AnyFanoutDefinition, type Fanout, type ItemRecord, type Logger, type TaskRecord } from '@fanout/core';
import { taskEventsHandler, taskState, type TaskEventSubscriber } from '@fanout/sse-pg';
import { Hono, type Context } from 'hono';
import { z } from 'zod';
import { errorResponse, HttpError } from './errors.ts';
import { openApiDocument } from './openapi.ts';
import { mountRoute, parseRequest, route, type AuthEnv, type Principal, type RouteSpec } from './route.ts';
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

export interface TaskRoutesOptions {
  fanout: Fanout;
  /** The fan-out these routes submit. Its input schema is the body of `POST /tasks`. */
  definition: AnyFanoutDefinition;
  /** Resolves a bearer token to its principal; null refuses it (401). */
  authenticate(token: string): Promise<Principal | null> | Principal | null;
  /** Streams `GET /tasks/:id/events`; without it the route answers 404. */
  subscriber?: TaskEventSubscriber;
  /** Extra readiness checks for `/readyz` (throw to report not ready). */
  ready?: () => Promise<void>;
  /** The app's own routes, served beside the task routes with the same rules and documented with them. */
  routes?: readonly RouteSpec[];
  /** The path this router is mounted at, for the OpenAPI document. @default '' */
  basePath?: string;
  /** Routes served at the root of the server (not under `basePath`), for the OpenAPI document. */
  rootRoutes?: readonly RouteSpec[];
  title?: string;
  logger?: Logger;
}

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

/** A store's cursor complaint, as the query parameter the client sent. */
async function withCursor<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof FanoutError && error.field === 'cursor') {
      const message = 'not a cursor this API returned (pass nextCursor from the previous page)';
      throw new HttpError(400, 'invalid_request', `query.cursor: ${message}`, [{ field: 'query.cursor', rule: 'invalid_cursor', message }]);
    }
    throw error;
  }
}

/** `/healthz` and `/readyz`: the process is up; the database and the queue answer. No token. */
export function healthRoutes(options: Pick<TaskRoutesOptions, 'fanout' | 'definition' | 'ready' | 'logger'>): RouteSpec[] {
  const { fanout, definition } = options;
  return [
    route({ method: 'get', path: '/healthz', summary: 'The process is up', responses: { 200: healthSchema }, auth: false, handler: (c) => c.json({ ok: true }) }),
    route({
      method: 'get',
      path: '/readyz',
      summary: 'The database and the queue are reachable',
      responses: { 200: healthSchema, 503: healthSchema },
      auth: false,
      async handler(c) {
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
      },
    }),
  ];
}

/** Serves route specs on a router, with JSON errors and a JSON 404 for unknown routes. */
export function routerOf(specs: readonly RouteSpec[], options: Pick<TaskRoutesOptions, 'authenticate' | 'logger'>): Hono<AuthEnv> {
  const app = new Hono<AuthEnv>();
  const log = (message: string, data: Record<string, unknown>) => options.logger?.error(message, data);
  app.onError((error, c) => errorResponse(c, error, log));
  app.notFound((c) => c.json({ error: { code: 'not_found', message: `no route ${c.req.method} ${c.req.path}` } }, 404));
  for (const spec of specs) mountRoute(app, spec, options.authenticate);
  return app;
}

/**
 * The task routes every Fanout app serves, for one definition: submit, list, read, items,
 * events (SSE), cancel, retry-failed, plus `/healthz`, `/readyz` and `/openapi.json`, and the
 * app's own `routes`. Every task route needs a bearer token; a task of another tenant answers
 * 404 exactly like an unknown one. Mount it under the app's prefix:
 * `app.route('/api/asl', taskRoutes({ … }))`.
 */
export function taskRoutes(options: TaskRoutesOptions): Hono<AuthEnv> {
  const { fanout, definition } = options;
  const submitBody = z.object({ input: definition.input, options: submitOptionsSchema.optional() }).strict();
  const ownTask = (c: Context<AuthEnv>) => ownedTask(c, fanout, definition);
  const basePath = options.basePath ?? '';

  const specs: RouteSpec[] = [
    ...healthRoutes(options),
    route({
      method: 'get',
      path: '/openapi.json',
      summary: 'This document',
      responses: { 200: z.object({}).passthrough() },
      auth: false,
      handler: (c) => c.json(openApiDocument({ title: options.title ?? `${definition.name} tasks`, basePath, routes: specs, ...(options.rootRoutes ? { rootRoutes: options.rootRoutes } : {}) })),
    }),
    route({
      method: 'post',
      path: '/tasks',
      summary: 'Start a task',
      body: submitBody,
      responses: { 202: submittedSchema, 400: errorSchema, 401: errorSchema },
      async handler(c, { body }) {
        const task = await fanout.submit(definition, body.input, { ...body.options, tenant: c.get('principal').tenant });
        c.header('location', `${basePath}/tasks/${task.id}`);
        return c.json({ id: task.id, status: task.status }, 202);
      },
    }),
    route({
      method: 'get',
      path: '/tasks',
      summary: "The tenant's tasks, newest first",
      query: listTasksQuery,
      responses: { 200: taskPageSchema, 400: errorSchema, 401: errorSchema },
      async handler(c, { query }) {
        const page = await withCursor(() =>
          fanout.listTasks({ kind: definition.name, tenant: c.get('principal').tenant, limit: query.limit, cursor: query.cursor ?? null, ...(query.status ? { status: query.status } : {}) }),
        );
        return c.json({ tasks: page.rows.map(taskView), nextCursor: page.nextCursor });
      },
    }),
    route({
      method: 'get',
      path: '/tasks/:id',
      summary: 'A task with its counts',
      params: taskIdParams,
      responses: { 200: taskViewSchema, 400: errorSchema, 401: errorSchema, 404: errorSchema },
      handler: async (c) => c.json(taskView(await ownTask(c))),
    }),
    route({
      method: 'get',
      path: '/tasks/:id/items',
      summary: "A task's items, in dispatch order, with failure reasons",
      params: taskIdParams,
      query: listItemsQuery,
      responses: { 200: itemPageSchema, 400: errorSchema, 401: errorSchema, 404: errorSchema },
      async handler(c, { query }) {
        const task = await ownTask(c);
        const page = await withCursor(() => fanout.listItems(task.id, { limit: query.limit, cursor: query.cursor ?? null, ...(query.status ? { status: query.status } : {}) }));
        return c.json({ items: page.rows.map(itemView), nextCursor: page.nextCursor });
      },
    }),
    route({
      method: 'post',
      path: '/tasks/:id/cancel',
      summary: 'Cancel a queued or running task',
      params: taskIdParams,
      responses: { 200: taskViewSchema, 400: errorSchema, 401: errorSchema, 404: errorSchema, 409: errorSchema },
      async handler(c) {
        const task = await ownTask(c);
        await fanout.cancel(task.id);
        return c.json(taskView((await fanout.getTask(task.id))!));
      },
    }),
    route({
      method: 'post',
      path: '/tasks/:id/retry-failed',
      summary: 'Re-run the failed items of a finished task',
      params: taskIdParams,
      body: retryFailedBody,
      responses: { 202: retriedSchema, 400: errorSchema, 401: errorSchema, 404: errorSchema, 409: errorSchema },
      async handler(c, { body }) {
        const task = await ownTask(c);
        const result = await fanout.retryFailed(task.id, body.deadlineMs === undefined ? {} : { deadlineMs: body.deadlineMs });
        return c.json({ retried: result.retried, task: taskView(result.task) }, 202);
      },
    }),
  ];

  if (options.subscriber) {
    const events = taskEventsHandler({
      subscriber: options.subscriber,
      loadTask: async (id) => {
        const t = await fanout.getTask(id);
        return t && t.kind === definition.name ? taskState(t) : null;
      },
      authorize: (c, task) => task.tenant === (c as Context<AuthEnv>).get('principal').tenant,
      notFound: (c) => c.json({ error: { code: 'not_found', message: `task ${c.req.param('id')} not found` } }, 404),
    });
    specs.push(
      route({
        method: 'get',
        path: '/tasks/:id/events',
        summary: 'Live progress (Server-Sent Events): the current state first, then events until the ending; Last-Event-ID resumes',
        params: taskIdParams,
        responses: { 200: { contentType: 'text/event-stream' }, 400: errorSchema, 401: errorSchema, 404: errorSchema },
        handler: (c) => events(c),
      }),
    );
  }
  specs.push(...(options.routes ?? []));
  return routerOf(specs, options);
}

/**
 * The task of route parameter `id`, when it is of this definition and the caller's tenant.
 * Another tenant's task is answered exactly like a missing one (404): ids cannot be probed.
 */
export async function ownedTask(c: Context<AuthEnv>, fanout: Fanout, definition: AnyFanoutDefinition): Promise<TaskRecord> {
  const { id } = parseRequest(taskIdParams, c.req.param(), 'params');
  const task = await fanout.getTask(id);
  if (!task || task.kind !== definition.name || task.tenant !== c.get('principal').tenant) {
    throw new HttpError(404, 'not_found', `task ${id} not found`);
  }
  return task;
}
