import { isTerminalTaskStatus, type AnyFanoutDefinition, type Fanout, type ItemRecord, type ItemStatus, type TaskRecord } from '@fanout/core';
import type { Context } from 'hono';
import { HttpError } from '../errors.ts';
import { route, type AuthEnv, type RouteSpec } from '../route.ts';
import { taskWithDetails } from '../routes/context.ts';
import { errorSchema, taskIdParams } from '../schemas.ts';
import { csvLines, type CsvColumn } from './csv.ts';
import { jsonArrayOf, textStream } from './stream.ts';

/** Every item of a task in dispatch order (optionally of one status), a page at a time. */
export async function* taskItems(fanout: Fanout, taskId: string, status?: ItemStatus): AsyncGenerator<ItemRecord> {
  let cursor: string | null = null;
  do {
    const page = await fanout.listItems(taskId, { limit: 1000, cursor, ...(status ? { status } : {}) });
    yield* page.rows;
    cursor = page.nextCursor;
  } while (cursor);
}

/**
 * An export's rows, then one look at their task: rows a purge (retention, a delete) deleted while
 * the export went were missing from the pages read after it, so such an export fails at its end
 * (the download is cut off, not a well-formed file with rows missing) instead of ending well.
 */
export async function* whileKept<T>(fanout: Fanout, taskId: string, rows: AsyncIterable<T> | Iterable<T>): AsyncGenerator<T> {
  yield* rows;
  const task = await fanout.getTask(taskId);
  if (!task || task.purgedAt) throw new HttpError(410, 'purged', `task ${taskId}: its details were deleted while they were exported; the export is incomplete`);
}

/** What an app gives the export: its rows for a finished task, and how a row becomes CSV. */
export interface ResultExport<Row> {
  /** Download names: `<name>-<task id>.csv`. */
  name: string;
  /** The finished task's rows, one by one (an async generator keeps 100,000 rows out of memory). */
  rows(task: TaskRecord): AsyncIterable<Row> | Iterable<Row>;
  /** CSV columns; the JSON export is the rows themselves. */
  columns: readonly CsvColumn<Row>[];
}

async function finishedTask(c: Context<AuthEnv>, fanout: Fanout, definition: AnyFanoutDefinition): Promise<TaskRecord> {
  // A task whose items retention deleted answers 410, as its items do (its results are gone).
  const task = await taskWithDetails(c, fanout, definition);
  if (!isTerminalTaskStatus(task.status)) throw new HttpError(409, 'conflict', `task ${task.id} is ${task.status}; results are exported once it has finished`);
  return task;
}

const download = (c: Context, body: AsyncIterable<string>, type: string, filename: string) =>
  c.body(textStream(body), 200, { 'content-type': `${type}; charset=utf-8`, 'content-disposition': `attachment; filename="${filename}"`, 'cache-control': 'no-store' });

/** `GET /tasks/:id/results.json` and `results.csv`: a finished task's results (409 before the end). */
export function resultExportRoutes<Row>(fanout: Fanout, definition: AnyFanoutDefinition, spec: ResultExport<Row>): RouteSpec[] {
  const responses = { 400: errorSchema, 401: errorSchema, 404: errorSchema, 409: errorSchema, 410: errorSchema };
  return [
    route({
      method: 'get',
      path: '/tasks/:id/results.json',
      summary: "A finished task's results as JSON ({ results: [...] }); 409 before it finished",
      params: taskIdParams,
      responses: { 200: { contentType: 'application/json' }, ...responses },
      async handler(c) {
        const task = await finishedTask(c, fanout, definition);
        return download(c, jsonArrayOf('results', whileKept(fanout, task.id, spec.rows(task))), 'application/json', `${spec.name}-${task.id}.json`);
      },
    }),
    route({
      method: 'get',
      path: '/tasks/:id/results.csv',
      summary: "A finished task's results as CSV (spreadsheet-safe); 409 before it finished",
      params: taskIdParams,
      responses: { 200: { contentType: 'text/csv' }, ...responses },
      async handler(c) {
        const task = await finishedTask(c, fanout, definition);
        return download(c, csvLines(spec.columns, whileKept(fanout, task.id, spec.rows(task))), 'text/csv', `${spec.name}-${task.id}.csv`);
      },
    }),
  ];
}
