import { consoleRoutes } from '@fanout/console';
import type { Principal } from '@fanout/http';
import { defaultSecurityHeaders, errorResponse, FailedAttempts, healthRoutes, requestId, resultExportRoutes, routerOf, taskRoutes, unknownRoute } from '@fanout/http';
import type { TaskEventSubscriber } from '@fanout/sse-pg';
import { Hono } from 'hono';
import type { AppRuntime } from '../app/app-runtime.ts';
import { traceRequests } from '../telemetry/http-tracing.ts';

export interface AppHttpOptions {
  authenticate(token: string): Principal | null | Promise<Principal | null>;
  /** Live streams; without it the event routes answer 404. */
  subscriber?: TaskEventSubscriber;
  /** While true, `/readyz` answers 503 so a load balancer stops sending requests. */
  draining?: () => boolean;
}

/** The API prefix of an app: `/api/<name>`. */
export const apiPrefix = (name: string) => `/api/${name}`;

/**
 * An app's HTTP surface: the shared task routes and the app's own under `/api/<name>` (one
 * OpenAPI document for all of them), the health routes at the root as well, and the operator
 * console at `/`.
 */
export function appHttp(rt: AppRuntime<any, any, any>, options: AppHttpOptions): Hono {
  const { app, ctx, fanout } = rt;
  const definition = ctx.services.definition;
  const prefix = apiPrefix(app.name);
  const ready = async () => {
    if (options.draining?.()) throw new Error('the process is shutting down');
  };
  const health = healthRoutes({ fanout, definition, ready, logger: ctx.logger });
  const limits = {
    bodyLimitBytes: ctx.env.FANOUT_BODY_LIMIT_BYTES,
    failedAttempts: ctx.env.FANOUT_AUTH_FAILURES_PER_MINUTE === 0 ? (false as const) : new FailedAttempts({ limit: ctx.env.FANOUT_AUTH_FAILURES_PER_MINUTE, windowMs: 60_000, proxyHops: ctx.env.FANOUT_PROXY_HOPS }),
    streamsPerTenant: ctx.env.FANOUT_STREAMS_PER_TENANT,
  };
  const routes = [...(app.routes?.(ctx) ?? []), ...(app.results ? resultExportRoutes(fanout, definition, app.results(ctx)) : [])];
  const api = taskRoutes({
    fanout,
    definition,
    authenticate: options.authenticate,
    ...(options.subscriber ? { subscriber: options.subscriber } : {}),
    ready,
    routes,
    basePath: prefix,
    rootRoutes: health,
    title: app.title,
    logger: ctx.logger,
    ...limits,
  });
  const http = new Hono();
  // The request's SERVER span first, so it covers the request id, the headers and the error answers.
  http.use(traceRequests());
  // Every answer of the server carries a request id and the security headers; a path no route
  // serves (under the API prefix or not) answers a JSON 404, an error a JSON 500 that is logged.
  http.use('*', requestId(), defaultSecurityHeaders());
  http.notFound(unknownRoute);
  http.onError((error, c) => errorResponse(c, error, (message, data) => ctx.logger.error(message, data)));
  http.route(prefix, api);
  http.route('/', routerOf(health, { authenticate: options.authenticate, logger: ctx.logger, ...limits }));
  const panel = typeof app.console === 'function' ? app.console(ctx) : app.console;
  http.route(
    '/',
    consoleRoutes({
      title: app.title,
      apiBase: prefix,
      newTask: panel.newTask,
      columns: panel.columns ?? [],
      detailPanels: panel.detailPanels ?? [],
      taskActions: panel.taskActions ?? [],
      pages: panel.pages ?? [],
      exports: [
        ...(app.results
          ? [
              { label: 'CSV', path: '/tasks/{id}/results.csv' },
              { label: 'JSON', path: '/tasks/{id}/results.json' },
            ]
          : []),
        ...(panel.exports ?? []),
      ],
    }),
  );
  return http;
}
