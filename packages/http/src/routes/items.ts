import type { Fanout, ItemRecord } from '@fanout/core';
import { HttpError } from '../errors.ts';
import { csvLines, type CsvColumn } from '../export/csv.ts';
import { taskItems, whileKept } from '../export/results.ts';
import { textStream } from '../export/stream.ts';
import { route, type RouteSpec } from '../route.ts';
import { errorSchema, failuresSchema, itemCountsSchema, itemPageSchema, itemParams, itemViewSchema, listItemsQuery, logsSchema, taskIdParams } from '../schemas.ts';
import { itemView } from '../views.ts';
import { taskWithDetails, type TaskRoutesOptions } from './context.ts';
import { withQuery } from './tasks.ts';

/** Lines of an item's log returned at most (the store keeps 500 per attempt). */
const MAX_LOG_LINES = 2000;

const FAILURE_COLUMNS: CsvColumn<ItemRecord>[] = [
  { header: 'item_id', value: (i) => i.id },
  { header: 'key', value: (i) => i.key },
  { header: 'attempts', value: (i) => i.attempts },
  { header: 'round', value: (i) => i.round },
  { header: 'error_code', value: (i) => i.error?.code ?? null },
  { header: 'error', value: (i) => i.error?.message ?? null },
  { header: 'retryable', value: (i) => (i.error?.retryable === undefined ? null : i.error.retryable) },
  { header: 'finished_at', value: (i) => i.finishedAt?.toISOString() ?? null },
  { header: 'snapshot', value: (i) => i.snapshot },
];

/** The item of the path's task, or a 404 naming it. */
async function taskItem(fanout: Fanout, taskId: string, itemId: string): Promise<ItemRecord> {
  const item = await fanout.getItem(taskId, itemId);
  if (!item) throw new HttpError(404, 'not_found', `item ${itemId} is not an item of task ${taskId}`);
  return item;
}

/** A task's items: pages, one item, counts by state, logs, failures. */
export function itemRoutes(options: TaskRoutesOptions): RouteSpec[] {
  const { fanout, definition } = options;
  const responses = { 400: errorSchema, 401: errorSchema, 404: errorSchema, 410: errorSchema };
  return [
    route({
      method: 'get',
      path: '/tasks/:id/items',
      summary: "A task's items, in dispatch order, with failure reasons (status: an item status, or waiting: pending after a failure)",
      params: taskIdParams,
      query: listItemsQuery,
      responses: { 200: itemPageSchema, ...responses },
      async handler(c, { query }) {
        const task = await taskWithDetails(c, fanout, definition);
        const page = await withQuery(() => fanout.listItems(task.id, { limit: query.limit, cursor: query.cursor ?? null, ...(query.status ? { status: query.status } : {}) }));
        return c.json({ items: page.rows.map(itemView), nextCursor: page.nextCursor });
      },
    }),
    route({
      method: 'get',
      path: '/tasks/:id/counts',
      summary: "A task's items by state right now: queued, waiting for a retry (and the next one's time), running, succeeded, failed (retryable), cancelled",
      params: taskIdParams,
      responses: { 200: itemCountsSchema, ...responses },
      async handler(c) {
        const task = await taskWithDetails(c, fanout, definition);
        const counts = await fanout.store.itemCounts(task.id);
        return c.json({ ...counts, nextRetryAt: counts.nextRetryAt?.toISOString() ?? null });
      },
    }),
    route({
      method: 'get',
      path: '/tasks/:id/items/:itemId',
      summary: 'One item of the task: its state, attempts, result or failure reason',
      params: itemParams,
      responses: { 200: itemViewSchema, ...responses },
      async handler(c, { params }) {
        const task = await taskWithDetails(c, fanout, definition);
        return c.json(itemView(await taskItem(fanout, task.id, params.itemId)));
      },
    }),
    route({
      method: 'get',
      path: '/tasks/:id/items/:itemId/logs',
      summary: "An item's stored log lines (ctx.log), oldest first",
      params: itemParams,
      responses: { 200: logsSchema, ...responses },
      async handler(c, { params }) {
        const task = await taskWithDetails(c, fanout, definition);
        const logs = await fanout.store.itemLogs(task.id, params.itemId, MAX_LOG_LINES);
        // No lines: an item that logged nothing, or no item of this task (a 404, not an empty log).
        if (logs.length === 0) await taskItem(fanout, task.id, params.itemId);
        return c.json({ logs: logs.map((l) => ({ at: l.at.toISOString(), attempt: l.attempt, message: l.message, ...(l.data ? { data: l.data } : {}) })) });
      },
    }),
    route({
      method: 'get',
      path: '/tasks/:id/failures',
      summary: "A task's failed items by error code, biggest group first",
      params: taskIdParams,
      responses: { 200: failuresSchema, ...responses },
      async handler(c) {
        const task = await taskWithDetails(c, fanout, definition);
        return c.json({ groups: await fanout.store.failureGroups(task.id) });
      },
    }),
    route({
      method: 'get',
      path: '/tasks/:id/failures.csv',
      summary: "A task's failed items as CSV (spreadsheet-safe)",
      params: taskIdParams,
      responses: { 200: { contentType: 'text/csv' }, ...responses },
      async handler(c) {
        const task = await taskWithDetails(c, fanout, definition);
        return c.body(textStream(csvLines(FAILURE_COLUMNS, whileKept(fanout, task.id, taskItems(fanout, task.id, 'failed')))), 200, {
          'content-type': 'text/csv; charset=utf-8',
          'content-disposition': `attachment; filename="${definition.name}-${task.id}-failures.csv"`,
          'cache-control': 'no-store',
        });
      },
    }),
  ];
}
