import { FanoutError, type TaskStatus } from '@fanout/core';
import { z } from 'zod';
import { HttpError, invalidRequest } from '../errors.ts';
import { route, type RouteSpec } from '../route.ts';
import { errorSchema, listTasksQuery, submitOptionsSchema, submittedSchema, taskIdParams, taskPageSchema, taskSummarySchema, taskViewSchema } from '../schemas.ts';
import { taskView } from '../views.ts';
import { ownedTask, type TaskRoutesOptions } from './context.ts';

const ACTIVE: TaskStatus[] = ['queued', 'running', 'stopping'];
const FINISHED: TaskStatus[] = ['completed', 'failed', 'cancelled'];

/** A store's complaint about a query parameter, as the query parameter the client sent. */
export async function withQuery<T>(read: () => Promise<T>): Promise<T> {
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

/**
 * A submit's refused input (the definition's `checkInput`, an input that cannot be stored) or
 * option, named where the request carried it: `body.input.ruleSetId`, `body.options.priority`.
 */
function submitRefusal(error: FanoutError): FanoutError | HttpError {
  if (error.code !== 'invalid_argument' || !error.field) return error;
  const where = (field: string) => (field === 'input' || field.startsWith('input.') ? `body.${field}` : `body.options.${field}`);
  return invalidRequest((error.issues ?? [{ field: error.field, rule: error.code, message: error.message.replace(/^[^:]*: /, '') }]).map((i) => ({ ...i, field: where(i.field) })));
}

/** Submit, list, count by status, read. */
export function taskReadWriteRoutes(options: TaskRoutesOptions): RouteSpec[] {
  const { fanout, definition } = options;
  const submitBody = z.object({ input: definition.input, options: submitOptionsSchema.optional() }).strict();
  return [
    route({
      method: 'post',
      path: '/tasks',
      summary: 'Start a task (Idempotency-Key: a repeated request with the same key answers the same task)',
      body: submitBody,
      headers: { 'Idempotency-Key': { description: 'A key of the client for this submit (1-200 visible ASCII characters); the same key with other input is a 409' } },
      responses: { 202: submittedSchema, 400: errorSchema, 401: errorSchema, 409: errorSchema },
      async handler(c, { body }) {
        const key = c.req.header('idempotency-key') ?? null;
        let task;
        try {
          task = await fanout.submit(definition, body.input, { ...body.options, tenant: c.get('principal').tenant, idempotencyKey: key });
        } catch (error) {
          if (!(error instanceof FanoutError)) throw error;
          if (error.field === 'idempotencyKey') {
            const status = error.code === 'conflict' ? 409 : 400;
            const rule = error.code === 'conflict' ? 'idempotency_conflict' : 'invalid_format';
            const message = error.message.replace(/^idempotencyKey: /, '');
            throw new HttpError(status, status === 409 ? 'conflict' : 'invalid_request', `headers.idempotency-key: ${message}`, [{ field: 'headers.idempotency-key', rule, message }]);
          }
          throw submitRefusal(error);
        }
        c.header('location', `${options.basePath ?? ''}/tasks/${task.id}`);
        if (task.replayed) c.header('idempotent-replayed', 'true');
        return c.json({ id: task.id, status: task.status }, 202);
      },
    }),
    route({
      method: 'get',
      path: '/tasks',
      summary: "The tenant's tasks, newest first (status: a status, active or finished; q: an id or its start; archived: true for the archived ones)",
      query: listTasksQuery,
      responses: { 200: taskPageSchema, 400: errorSchema, 401: errorSchema },
      async handler(c, { query }) {
        const status = query.status === 'active' || query.status === 'finished' ? undefined : query.status;
        const page = await withQuery(() =>
          fanout.listTasks({
            kind: definition.name,
            tenant: c.get('principal').tenant,
            limit: query.limit,
            cursor: query.cursor ?? null,
            archived: query.archived === 'true',
            ...(status ? { status } : {}),
            ...(query.status === 'active' ? { statuses: ACTIVE } : query.status === 'finished' ? { statuses: FINISHED } : {}),
            ...(query.q ? { idPrefix: query.q.toLowerCase() } : {}),
          }),
        );
        return c.json({ tasks: page.rows.map(taskView), nextCursor: page.nextCursor });
      },
    }),
    route({
      method: 'get',
      path: '/tasks/summary',
      summary: "The tenant's tasks by status (unarchived), and how many are archived",
      responses: { 200: taskSummarySchema, 401: errorSchema },
      async handler(c) {
        const summary = await fanout.store.taskSummary({ kind: definition.name, tenant: c.get('principal').tenant });
        return c.json({ counts: { ...summary.byStatus, archived: summary.archived } });
      },
    }),
    route({
      method: 'get',
      path: '/tasks/:id',
      summary: 'A task with its counts',
      params: taskIdParams,
      responses: { 200: taskViewSchema, 400: errorSchema, 401: errorSchema, 404: errorSchema },
      handler: async (c) => c.json(taskView(await ownedTask(c, fanout, definition))),
    }),
  ];
}
