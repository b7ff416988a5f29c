import { bearerAuth, errorResponse, HttpError, ownedTask, parseRequest, taskRoutes, type AuthEnv, type Principal } from '@fanout/http';
import type { TaskEventSubscriber } from '@fanout/sse-pg';
import { Hono, type Context } from 'hono';
import { z } from 'zod';
import { dashboardHtml } from './dashboard.ts';
import { taskResults, toCsv } from './results.ts';
import type { AslRuntime } from './runtime.ts';

export const PREFIX = '/api/asl';

/** Bearer tokens and their tenants, e.g. from ASL_TOKENS="token-a:team-a,token-b:team-b". */
export function parseTokens(spec: string): Map<string, string> {
  const tokens = new Map<string, string>();
  for (const pair of spec.split(',').map((s) => s.trim()).filter(Boolean)) {
    const [token, tenant] = pair.split(':');
    if (!token || !tenant) throw new Error(`ASL_TOKENS: "${pair}" must be token:tenant`);
    tokens.set(token, tenant);
  }
  return tokens;
}

const documentsQuery = z.object({ limit: z.coerce.number().int().min(1).max(1000).default(200) }).strict();

/** The ASL API: the shared task routes, the library, result exports, and the dashboard page. */
export function aslApp(rt: AslRuntime, options: { tokens: Map<string, string>; subscriber?: TaskEventSubscriber }): Hono {
  const authenticate = (token: string): Principal | null => {
    const tenant = options.tokens.get(token);
    return tenant ? { tenant } : null;
  };
  const routes = taskRoutes({
    fanout: rt.fanout,
    definition: rt.definition,
    authenticate,
    basePath: PREFIX,
    title: 'ASL full-text extraction',
    ...(options.subscriber ? { subscriber: options.subscriber } : {}),
  });

  // App routes under the same prefix and the same rules (bearer token, tenant, JSON errors).
  const extra = new Hono<AuthEnv>();
  const requireAuth = bearerAuth(authenticate);
  extra.onError((error, c) => errorResponse(c, error, (message, data) => rt.fanout.logger.error(message, data)));
  extra.get('/documents', requireAuth, async (c) => {
    const query = parseRequest(documentsQuery, c.req.query(), 'query');
    const docs = await rt.prisma.kbDocument.findMany({ where: { owner: c.get('principal').tenant }, orderBy: [{ createdAt: 'asc' }, { filename: 'asc' }], take: query.limit });
    return c.json({ documents: docs.map((d) => ({ id: d.id, title: d.title, filename: d.filename, createdAt: d.createdAt.toISOString() })) });
  });
  const results = async (c: Context<AuthEnv>) => {
    const task = await ownedTask(c, rt.fanout, rt.definition);
    const rows = await taskResults(rt, task.id);
    if (rows === 'not_finished') throw new HttpError(409, 'conflict', `task ${task.id} is ${task.status}; results are exported once it has finished`);
    return rows;
  };
  extra.get('/tasks/:id/results.json', requireAuth, async (c) => c.json({ results: await results(c) }));
  extra.get('/tasks/:id/results.csv', requireAuth, async (c) => {
    const rows = await results(c);
    return c.body(toCsv(rows), 200, { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': `attachment; filename="asl-${c.req.param('id')}.csv"` });
  });

  const app = new Hono();
  app.route(PREFIX, extra);
  app.route(PREFIX, routes);
  app.get('/', (c) => c.html(dashboardHtml(PREFIX)));
  return app;
}
