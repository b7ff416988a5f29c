import type { Context, Hono } from 'hono';
import { unstorableJsonEscape } from '@fanout/core';
import { z } from 'zod';
import { clientAddress, type FailedAttempts } from './auth/failed-attempts.ts';
import { HttpError, validationError } from './errors.ts';
import { DEFAULT_BODY_LIMIT_BYTES, readJsonBody } from './request/json-body.ts';

export type Role = 'user' | 'operator';

export interface Principal {
  tenant: string;
  /** Operators also see the platform's operations view. @default 'user' */
  role?: Role;
}

/** The Hono environment of authenticated routes: `c.get('principal')`, `c.get('requestId')`. */
export type AuthEnv = { Variables: { principal: Principal; requestId: string } };

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

/** A string PostgreSQL would refuse, where it is, and why (`unstorableTextAt`). */
export interface TextIssue {
  field: string;
  rule: 'nul_character' | 'lone_surrogate';
  message: string;
}

const MESSAGES: Record<TextIssue['rule'], string> = {
  nul_character: 'must not contain the NUL character (U+0000)',
  lone_surrogate: 'must be well-formed Unicode text (it holds half of a surrogate pair, as a "\\ud800" escape makes)',
};

const textIssue = (field: string, text: string): TextIssue | null => {
  const rule = text.includes('\u0000') ? 'nul_character' : text.isWellFormed() ? null : 'lone_surrogate';
  return rule && { field, rule, message: MESSAGES[rule] };
};

/**
 * The first string in `value` (a string, or an object or array of them, keys included) that
 * PostgreSQL's JSON refuses: one holding the NUL character (U+0000), which no text or JSON column
 * stores, or half a character (a lone surrogate, as a JSON or YAML `\ud800` escape gives it), with
 * its path from `path` (`body.rules.0.message`) and the rule it breaks; null when none does. For
 * what reaches the database another way than a JSON body (a YAML text, a file's values), so that
 * it is refused as the user's mistake it is. Below 64 levels the rest of a value is looked at
 * whole, and named by where it starts.
 */
export function unstorableTextAt(value: unknown, path: string, depth = 0, ancestors: Set<object> = new Set()): TextIssue | null {
  if (typeof value === 'string') return textIssue(path, value);
  if (!value || typeof value !== 'object') return null;
  // A value inside itself (see `selfReferenceAt`) is looked at once.
  if (ancestors.has(value)) return null;
  if (depth > 64) {
    let json: string;
    try {
      json = JSON.stringify(value);
    } catch {
      return null;
    }
    const rule = unstorableJsonEscape(json);
    return rule && { field: path, rule, message: `${MESSAGES[rule]}, here or deeper` };
  }
  ancestors.add(value);
  for (const [key, child] of Object.entries(value)) {
    const inKey = textIssue(`${path}.${key.replaceAll('\u0000', '\\u0000').toWellFormed()}`, key);
    if (inKey) return inKey;
    const found = unstorableTextAt(child, `${path}.${key}`, depth + 1, ancestors);
    if (found) return found;
  }
  ancestors.delete(value);
  return null;
}

/**
 * Where `value` holds itself: the path of the first object or array found inside itself (a YAML
 * alias inside its own anchor, `a: &a [*a, *a]`, parses to such a value); null when none is.
 * Such a value has no JSON, and code that walks it as a tree never ends: refuse it where it is parsed.
 */
export function selfReferenceAt(value: unknown, path: string, ancestors: Set<object> = new Set()): string | null {
  if (!value || typeof value !== 'object') return null;
  if (ancestors.has(value)) return path;
  ancestors.add(value);
  for (const [key, child] of Object.entries(value)) {
    const found = selfReferenceAt(child, `${path}.${key}`, ancestors);
    if (found) return found;
  }
  ancestors.delete(value);
  return null;
}

/** Validates a request part; a mistake is a 400 naming the field and the rule. */
export function parseRequest<T extends z.ZodType>(schema: T, value: unknown, where: 'body' | 'query' | 'params'): z.output<T> {
  const text = unstorableTextAt(value, where);
  if (text) throw new HttpError(400, 'invalid_request', `${text.field}: ${text.message}`, [text]);
  const result = schema.safeParse(value);
  if (!result.success) throw validationError(where, result.error);
  return result.data;
}

export type Authenticate = (token: string) => Promise<Principal | null> | Principal | null;

/** How routes read requests: the largest JSON body, and the limit on refused tokens per client. */
export interface MountOptions {
  /** The largest JSON body in bytes (413 beyond it). @default 1 MiB */
  bodyLimitBytes?: number;
  /** Refused tokens per client address; without it, none are counted. */
  failedAttempts?: FailedAttempts;
}

/**
 * Middleware: a bearer token resolved to its principal, or a 401. With `failedAttempts`, a client
 * that presented too many refused tokens is answered 429 with `Retry-After` until its window ends.
 */
export function bearerAuth(authenticate: Authenticate, failedAttempts?: FailedAttempts) {
  return async (c: Context<AuthEnv>, next: () => Promise<void>) => {
    const client = failedAttempts ? clientAddress(c, failedAttempts.proxyHops) : '';
    const wait = failedAttempts?.blockedFor(client) ?? 0;
    if (wait > 0) {
      throw new HttpError(429, 'too_many_requests', `authorization: too many refused tokens from this client; try again in ${wait} s`, undefined, { 'retry-after': String(wait) });
    }
    const header = c.req.header('authorization') ?? '';
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    if (!match) throw new HttpError(401, 'unauthorized', 'authorization: a bearer token is required (Authorization: Bearer <token>)');
    const principal = await authenticate(match[1]!);
    if (!principal) {
      failedAttempts?.fail(client);
      throw new HttpError(401, 'unauthorized', 'authorization: the token is not valid');
    }
    c.set('principal', principal);
    await next();
  };
}

const NO_QUERY = z.object({}).strict();

/** Adds a route spec to a router: authentication, validation of every part, then the handler. */
export function mountRoute(app: Hono<AuthEnv>, spec: RouteSpec, authenticate: Authenticate, options: MountOptions = {}): void {
  const auth = spec.auth ?? true;
  const requireAuth = bearerAuth(authenticate, options.failedAttempts);
  const bodyLimit = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  app.on(spec.method.toUpperCase(), spec.path, async (c) => {
    if (auth) await requireAuth(c, async () => {});
    if (spec.operator && c.get('principal').role !== 'operator') {
      throw new HttpError(403, 'forbidden', 'authorization: this route is for operators; the token is not an operator\u2019s');
    }
    // Path parameters first: a malformed id is answered before the body is read.
    const params = spec.params ? parseRequest(spec.params, c.req.param(), 'params') : {};
    // A route that takes no query parameter refuses them too, as a route refuses one it does not know.
    const query = parseRequest(spec.query ?? NO_QUERY, c.req.query(), 'query');
    const body = spec.body ? parseRequest(spec.body, await readJsonBody(c, bodyLimit), 'body') : {};
    return spec.handler(c, { params, query, body } as never);
  });
}

/** `/tasks/:id/items` as an OpenAPI path template: `/tasks/{id}/items`. */
export const openApiPath = (path: string): string => path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');
