import { randomUUID } from 'node:crypto';
import { FanoutError, type FanoutErrorCode } from '@fanout/core';
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { z } from 'zod';
import { requestIdOf } from './request/request-id.ts';

/** The one place Fanout error codes become HTTP statuses. */
export const STATUS_OF: Record<FanoutErrorCode, ContentfulStatusCode> = {
  invalid_argument: 400,
  invalid_queue_name: 400,
  payload_too_large: 413,
  not_found: 404,
  conflict: 409,
  unknown_definition: 400,
  aborted: 503,
  not_started: 503,
  schema_outdated: 503,
};

export interface Issue {
  /** Where: `body.documentIds.3`, `query.limit`, `params.id`. */
  field: string;
  /** The rule broken, e.g. `too_small`, `invalid_type`, `invalid_format`. */
  rule: string;
  message: string;
}

export interface ErrorBody {
  /** `requestId`: on a 500, the id its log line carries (also in the `X-Request-Id` header). */
  error: { code: string; message: string; issues?: Issue[]; requestId?: string };
}

/** A client mistake, answered with a 4xx and a JSON body; never a 500. */
export class HttpError extends Error {
  readonly status: ContentfulStatusCode;
  readonly code: string;
  readonly issues: Issue[] | undefined;
  /** Headers of the answer (`Retry-After` of a 429). */
  readonly headers: Record<string, string>;

  constructor(status: ContentfulStatusCode, code: string, message: string, issues?: Issue[], headers: Record<string, string> = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.issues = issues;
    this.headers = headers;
  }
}

export function validationError(where: 'body' | 'query' | 'params', error: z.ZodError): HttpError {
  const issues = error.issues.map((issue) => ({
    field: [where, ...issue.path.map(String)].join('.'),
    // A check of the app's own (`refine`) names its rule with `params: { rule }`.
    rule: issue.code === 'custom' && typeof issue.params?.rule === 'string' ? issue.params.rule : issue.code,
    message: issue.message,
  }));
  const first = issues[0];
  return new HttpError(400, 'invalid_request', first ? `${first.field}: ${first.message} (${first.rule})` : `${where}: invalid`, issues);
}

/** A 400 `invalid_request` listing the issues, its message the first's: `body.input.ruleSetId: not a rule set of this study (other_study)`. */
export function invalidRequest(issues: readonly Issue[]): HttpError {
  const first = issues[0]!;
  return new HttpError(400, 'invalid_request', `${first.field}: ${first.message} (${first.rule})`, [...issues]);
}

/** A Fanout error's issues as the answer lists them (its own, or one for its field), if it names any. */
function fanoutIssues(error: FanoutError): Issue[] | undefined {
  if (error.issues) return error.issues.map((issue) => ({ ...issue }));
  return error.field ? [{ field: error.field, rule: error.code, message: error.message }] : undefined;
}

/** What a log line says of an error: message, name, code, the causes', and the stack. */
function errorDetails(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { error: typeof error === 'string' ? error : JSON.stringify(error) ?? String(error) };
  const code = (error as { code?: unknown }).code;
  const cause = error.cause instanceof Error ? error.cause.message : undefined;
  return { error: error.message || error.name, errorName: error.name, ...(code === undefined ? {} : { errorCode: code }), ...(cause ? { cause } : {}), stack: error.stack };
}

/**
 * Answers any error thrown by a route: client mistakes as 4xx, the rest as a 500 logged once with
 * the request's id, which the answer carries too (body and `X-Request-Id`).
 */
export function errorResponse(c: Context, error: unknown, log: (message: string, data: Record<string, unknown>) => void): Response {
  if (error instanceof HttpError) {
    const body: ErrorBody = { error: { code: error.code, message: error.message, ...(error.issues ? { issues: error.issues } : {}) } };
    return c.json(body, error.status, error.headers);
  }
  if (error instanceof FanoutError) {
    const issues = fanoutIssues(error);
    const body: ErrorBody = { error: { code: error.code, message: error.message, ...(issues ? { issues } : {}) } };
    return c.json(body, STATUS_OF[error.code], error.retryAfterMs === undefined ? {} : { 'retry-after': String(Math.max(1, Math.ceil(error.retryAfterMs / 1000))) });
  }
  if ((error as { name?: string })?.name === 'ZodError') return errorResponse(c, validationError('body', error as z.ZodError), log);
  const requestId = requestIdOf(c) ?? randomUUID();
  log('request failed', { requestId, method: c.req.method, path: c.req.path, ...errorDetails(error) });
  return c.json({ error: { code: 'internal', message: `internal error (request ${requestId})`, requestId } } satisfies ErrorBody, 500, { 'x-request-id': requestId });
}
