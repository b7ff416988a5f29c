import { streamTenantEvents, taskEventsHandler, taskState } from '@fanout/sse-pg';
import type { Context } from 'hono';
import { HttpError } from '../errors.ts';
import { route, type AuthEnv, type RouteSpec } from '../route.ts';
import { errorSchema, liveQuery, taskIdParams } from '../schemas.ts';
import type { TaskRoutesOptions } from './context.ts';
import { StreamLimit } from './stream-limit.ts';

/** The live streams: every task of the caller's tenant on one connection, and one task's events. */
export function liveRoutes(options: TaskRoutesOptions): RouteSpec[] {
  const { fanout, definition, subscriber } = options;
  if (!subscriber) return [];
  const streams = new StreamLimit(options.streamsPerTenant ?? 100);
  const events = taskEventsHandler({
    subscriber,
    loadTask: async (id) => {
      const t = await fanout.getTask(id);
      return t && t.kind === definition.name ? taskState(t) : null;
    },
    authorize: (c, task) => task.tenant === (c as Context<AuthEnv>).get('principal').tenant,
    notFound: (c) => c.json({ error: { code: 'not_found', message: `task ${c.req.param('id')} not found` } }, 404),
  });
  return [
    route({
      method: 'get',
      path: '/events',
      summary:
        "Live states of every task of the caller's tenant (Server-Sent Events, one connection for a whole page): the unfinished tasks first, then changes; with task=<id>, also that task's item failures and logs. Last-Event-ID resumes",
      query: liveQuery,
      responses: { 200: { contentType: 'text/event-stream' }, 400: errorSchema, 401: errorSchema, 404: errorSchema, 429: errorSchema },
      async handler(c, { query }) {
        const tenant = c.get('principal').tenant;
        let focus: string | null = null;
        if (query.task) {
          const task = await fanout.getTask(query.task);
          if (!task || task.kind !== definition.name || task.tenant !== tenant) throw new HttpError(404, 'not_found', `task ${query.task} not found`);
          focus = task.id; // as stored: events carry it (one sent in capitals names the same task)
        }
        return streams.hold(tenant, () =>
          streamTenantEvents(c, {
            subscriber,
            scope: { tenant, kinds: [definition.name] },
            focus,
            loadStates: (scope, since, limit, { unfinished }) => fanout.store.liveTaskCounts({ tenant: scope.tenant, kinds: scope.kinds, since, limit, unfinished }),
          }),
        );
      },
    }),
    route({
      method: 'get',
      path: '/tasks/:id/events',
      summary: 'Live progress of one task (Server-Sent Events): the current state first, then events until the ending; Last-Event-ID resumes',
      params: taskIdParams,
      responses: { 200: { contentType: 'text/event-stream' }, 400: errorSchema, 401: errorSchema, 404: errorSchema, 429: errorSchema },
      handler: (c) => streams.hold(c.get('principal').tenant, () => events(c)),
    }),
  ];
}
