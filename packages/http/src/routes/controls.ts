import { FanoutError } from '@fanout/core';
import { HttpError } from '../errors.ts';
import { route, type RouteSpec } from '../route.ts';
import { errorSchema, itemParams, retriedSchema, retryFailedBody, retryItemBody, taskIdParams, taskViewSchema } from '../schemas.ts';
import { taskView } from '../views.ts';
import { ownedTask, type TaskRoutesOptions } from './context.ts';

/**
 * Runs a control of the task `taskId` of the path: what the runtime refuses of its `taskId` or
 * `itemId` is, to an HTTP client, the path's `params.id` or `params.itemId`, the names its
 * validation errors use. A task gone since it was read is answered as `ownedTask` answers a
 * missing one.
 */
async function onPathIds<T>(taskId: string, control: () => Promise<T>): Promise<T> {
  try {
    return await control();
  } catch (error) {
    const field = error instanceof FanoutError && error.field !== undefined ? PATH_FIELDS.get(error.field) : undefined;
    if (!field) throw error;
    const refused = error as FanoutError;
    if (refused.code === 'not_found' && field === 'params.id') throw new HttpError(404, 'not_found', `task ${taskId} not found`);
    throw new FanoutError(refused.code, refused.message, { field, cause: refused, ...(refused.retryAfterMs === undefined ? {} : { retryAfterMs: refused.retryAfterMs }) });
  }
}
const PATH_FIELDS = new Map([
  ['taskId', 'params.id'],
  ['itemId', 'params.itemId'],
]);

/** Cancel, retry (failed items, one item), archive, delete. */
export function controlRoutes(options: TaskRoutesOptions): RouteSpec[] {
  const { fanout, definition } = options;
  const responses = { 400: errorSchema, 401: errorSchema, 404: errorSchema, 409: errorSchema };
  return [
    route({
      method: 'post',
      path: '/tasks/:id/cancel',
      summary: 'Cancel a queued or running task',
      params: taskIdParams,
      responses: { 200: taskViewSchema, ...responses },
      async handler(c) {
        const task = await ownedTask(c, fanout, definition);
        await onPathIds(task.id, () => fanout.cancel(task.id));
        return c.json(taskView((await fanout.getTask(task.id))!));
      },
    }),
    route({
      method: 'post',
      path: '/tasks/:id/retry-failed',
      summary: 'Re-run the failed items of a finished task (retryableOnly: only those whose failure may pass)',
      params: taskIdParams,
      body: retryFailedBody,
      responses: { 202: retriedSchema, ...responses },
      async handler(c, { body }) {
        const task = await ownedTask(c, fanout, definition);
        const result = await onPathIds(task.id, () =>
          fanout.retryFailed(task.id, { ...(body.deadlineMs === undefined ? {} : { deadlineMs: body.deadlineMs }), ...(body.retryableOnly ? { retryableOnly: true } : {}) }),
        );
        return c.json({ retried: result.retried, task: taskView(result.task) }, 202);
      },
    }),
    route({
      method: 'post',
      path: '/tasks/:id/items/:itemId/retry',
      summary: 'Re-run one failed item of a finished task, whatever its failure',
      params: itemParams,
      body: retryItemBody,
      responses: { 202: retriedSchema, ...responses },
      async handler(c, { params, body }) {
        const task = await ownedTask(c, fanout, definition);
        const result = await onPathIds(task.id, () => fanout.retryItem(task.id, params.itemId, body.deadlineMs === undefined ? {} : { deadlineMs: body.deadlineMs }));
        return c.json({ retried: result.retried, task: taskView(result.task) }, 202);
      },
    }),
    route({
      method: 'post',
      path: '/tasks/:id/archive',
      summary: 'Archive a finished task (it leaves the default list)',
      params: taskIdParams,
      responses: { 200: taskViewSchema, ...responses },
      async handler(c) {
        const task = await ownedTask(c, fanout, definition);
        return c.json(taskView(await onPathIds(task.id, () => fanout.archive(task.id))));
      },
    }),
    route({
      method: 'delete',
      path: '/tasks/:id',
      summary: 'Delete a finished task with its items and logs',
      params: taskIdParams,
      responses: { 204: { contentType: 'text/plain', description: 'deleted' }, ...responses },
      async handler(c) {
        const task = await ownedTask(c, fanout, definition);
        await onPathIds(task.id, () => fanout.deleteTask(task.id));
        return c.body(null, 204);
      },
    }),
  ];
}
