import { consoleLogger, maskedLogger } from '@fanout/core';
import { Hono, type Context } from 'hono';
import { z } from 'zod';
import { FailedAttempts } from '../auth/failed-attempts.ts';
import { errorResponse } from '../errors.ts';
import { openApiDocument } from '../openapi.ts';
import { requestId } from '../request/request-id.ts';
import { apiSecurityHeaders } from '../request/security-headers.ts';
import { mountRoute, route, type AuthEnv, type RouteSpec } from '../route.ts';
import type { TaskRoutesOptions } from './context.ts';
import { controlRoutes } from './controls.ts';
import { healthRoutes } from './health.ts';
import { itemRoutes } from './items.ts';
import { liveRoutes } from './live.ts';
import { operationRoutes } from './operations.ts';
import { taskReadWriteRoutes } from './tasks.ts';

/**
 * The JSON 404 of a path no route serves, code `no_route` (a thing a route does not find is
 * `not_found`). Hono answers unknown paths with the `notFound` of the app that serves them: an app
 * mounting routers gives it this, with `defaultSecurityHeaders()`.
 */
export const unknownRoute = (c: Context) => c.json({ error: { code: 'no_route', message: `no route ${c.req.method} ${c.req.path}` } }, 404);

/**
 * Serves route specs on a router: request ids, the API's security headers, JSON errors (a 500
 * logged once with its request id), a JSON 404 for unknown routes, bodies read within the limit.
 */
export function routerOf(
  specs: readonly RouteSpec[],
  options: Pick<TaskRoutesOptions, 'authenticate' | 'logger' | 'bodyLimitBytes' | 'failedAttempts'>,
): Hono<AuthEnv> {
  const app = new Hono<AuthEnv>();
  // Without a logger of the app's, a 500 still reaches stderr: an operator must be able to find it.
  const logger = maskedLogger(options.logger ?? consoleLogger('error'));
  const log = (message: string, data: Record<string, unknown>) => logger.error(message, data);
  app.use('*', requestId());
  // The API's headers on its own paths only: a router mounted at the root (health) must not
  // take over the policy of the console's page beside it.
  for (const path of new Set(specs.map((spec) => spec.path))) app.use(path, apiSecurityHeaders());
  app.onError((error, c) => errorResponse(c, error, log));
  app.notFound(unknownRoute);
  const failedAttempts = options.failedAttempts === false ? undefined : options.failedAttempts instanceof FailedAttempts ? options.failedAttempts : new FailedAttempts(options.failedAttempts);
  for (const spec of specs) {
    mountRoute(app, spec, options.authenticate, { ...(options.bodyLimitBytes ? { bodyLimitBytes: options.bodyLimitBytes } : {}), ...(failedAttempts ? { failedAttempts } : {}) });
  }
  // A path served, asked with a method it does not take: 405 with the methods it takes (after
  // every route: a route of the method answers first).
  const methods = new Map<string, Set<string>>();
  for (const spec of specs) methods.set(spec.path, (methods.get(spec.path) ?? new Set()).add(spec.method.toUpperCase()));
  for (const [path, taken] of methods) {
    const allow = [...taken, ...(taken.has('GET') ? ['HEAD'] : [])].join(', ');
    app.all(path, (c) => c.json({ error: { code: 'method_not_allowed', message: `${c.req.method} ${c.req.path}: this path takes ${allow}` } }, 405, { allow }));
  }
  return app;
}

/**
 * The routes every Fanout app serves for one definition: submit, list, read, items, counts,
 * logs, failures, controls (cancel, retry, archive, delete), live streams, identity and
 * operations, plus `/healthz`, `/readyz` and `/openapi.json`, and the app's own `routes`. Every
 * task route needs a bearer token; a task of another tenant answers 404 exactly like an unknown
 * one. Mount it under the app's prefix: `app.route('/api/asl', taskRoutes({ … }))`.
 */
export function taskRoutes(options: TaskRoutesOptions): Hono<AuthEnv> {
  const specs: RouteSpec[] = [
    ...healthRoutes(options),
    route({
      method: 'get',
      path: '/openapi.json',
      summary: 'This document',
      responses: { 200: z.object({}).passthrough() },
      auth: false,
      handler: (c) =>
        c.json(
          openApiDocument({
            title: options.title ?? `${options.definition.name} tasks`,
            basePath: options.basePath ?? '',
            routes: specs,
            ...(options.rootRoutes ? { rootRoutes: options.rootRoutes } : {}),
          }),
        ),
    }),
    // Fixed paths before `/tasks/:id`, which would take them for an id.
    ...taskReadWriteRoutes(options),
    ...itemRoutes(options),
    ...controlRoutes(options),
    ...liveRoutes(options),
    ...operationRoutes(options),
    ...(options.routes ?? []),
  ];
  return routerOf(specs, options);
}

export { ownedTask } from './context.ts';
export type { TaskRoutesOptions } from './context.ts';
export { healthRoutes } from './health.ts';
