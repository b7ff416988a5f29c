import type { Context, Hono } from 'hono';
import { z } from 'zod';
import { HttpError, validationError } from './errors.ts';

export type Role = 'user' | 'operator';

export interface Principal {
  tenant: string;
  /** Operators also see the platform's operations view. @default 'user' */
  role?: Role;
}

/** The Hono environment of authenticated routes: `c.get('principal')`. */
export type AuthEnv = { Variables: { principal: Principal } };

/** A response of a route: a JSON schema, or another content type (CSV, an event stream). */
export type ResponseSpec = z.ZodType | { contentType: string; description?: string };

/**
 * One route: how it is documented and validated (from the same zod schemas) and what it does.
 * `taskRoutes` serves the shared task routes and any app routes given as specs, so every served
 * route is in the OpenAPI document and every request part is checked before the handler runs.
 */
export interface RouteSpec<P extends z.ZodType = z.ZodType, Q extends z.ZodType = z.ZodType, B extends z.ZodType = z.ZodType> {
  method: 'get' | 'post' | 'delete';
  /** A Hono path relative to the router: `/documents`, `/tasks/:id/results.csv`. */
  path: string;
  summary: string;
  params?: P;
  query?: Q;
  /** A JSON body; an empty body is read as `{}`. */
  body?: B;
  /** Documented request headers (e.g. `Idempotency-Key`). */
  headers?: Record<string, { description: string; required?: boolean }>;
  responses: Record<number, ResponseSpec>;
  /** Whether a bearer token is required. @default true */
  auth?: boolean;
  /** Only principals with the `operator` role (403 for others). @default false */
  operator?: boolean;
  handler(c: Context<AuthEnv>, request: { params: z.output<P>; query: z.output<Q>; body: z.output<B> }): Response | Promise<Response>;
}

/** Declares a route with its types inferred from its schemas. */
export function route<P extends z.ZodType = z.ZodObject<{}>, Q extends z.ZodType = z.ZodObject<{}>, B extends z.ZodType = z.ZodObject<{}>>(
  spec: RouteSpec<P, Q, B>,
): RouteSpec {
  return spec as unknown as RouteSpec;
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

/** Middleware: a bearer token resolved to its principal, or a 401. */
export function bearerAuth(authenticate: (token: string) => Promise<Principal | null> | Principal | null) {
  return async (c: Context<AuthEnv>, next: () => Promise<void>) => {
    const header = c.req.header('authorization') ?? '';
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    if (!match) throw new HttpError(401, 'unauthorized', 'authorization: a bearer token is required (Authorization: Bearer <token>)');
    const principal = await authenticate(match[1]!);
    if (!principal) throw new HttpError(401, 'unauthorized', 'authorization: the token is not valid');
    c.set('principal', principal);
    await next();
  };
}

/** Adds a route spec to a router: authentication, validation of every part, then the handler. */
export function mountRoute(app: Hono<AuthEnv>, spec: RouteSpec, authenticate: (token: string) => Promise<Principal | null> | Principal | null): void {
  const auth = spec.auth ?? true;
  const requireAuth = bearerAuth(authenticate);
  app.on(spec.method.toUpperCase(), spec.path, async (c) => {
    if (auth) await requireAuth(c, async () => {});
    if (spec.operator && c.get('principal').role !== 'operator') {
      throw new HttpError(403, 'forbidden', 'authorization: this route is for operators; the token is not an operator\u2019s');
    }
    // Path parameters first: a malformed id is answered before the body is read.
    const params = spec.params ? parseRequest(spec.params, c.req.param(), 'params') : {};
    const query = spec.query ? parseRequest(spec.query, c.req.query(), 'query') : {};
    const body = spec.body ? parseRequest(spec.body, await jsonBody(c), 'body') : {};
    return spec.handler(c, { params, query, body } as never);
  });
}

/** `/tasks/:id/items` as an OpenAPI path template: `/tasks/{id}/items`. */
export const openApiPath = (path: string): string => path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');
