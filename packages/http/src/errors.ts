import { FanoutError, type FanoutErrorCode } from '@fanout/core';
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { z } from 'zod';

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
  error: { code: string; message: string; issues?: Issue[] };
}

/** A client mistake, answered with a 4xx and a JSON body; never a 500. */
export class HttpError extends Error {
  readonly status: ContentfulStatusCode;
  readonly code: string;
  readonly issues: Issue[] | undefined;

  constructor(status: ContentfulStatusCode, code: string, message: string, issues?: Issue[]) {
    super(message);
    this.status = status;
    this.code = code;
    this.issues = issues;
  }
}

export function validationError(where: 'body' | 'query' | 'params', error: z.ZodError): HttpError {
  const issues = error.issues.map((issue) => ({
    field: [where, ...issue.path.map(String)].join('.'),
    rule: issue.code,
    message: issue.message,
  }));
  const first = issues[0];
  return new HttpError(400, 'invalid_request', first ? `${first.field}: ${first.message} (${first.rule})` : `${where}: invalid`, issues);
}

/** Answers any error thrown by a route: client mistakes as 4xx, the rest as a logged 500. */
export function errorResponse(c: Context, error: unknown, log: (message: string, data: Record<string, unknown>) => void): Response {
  if (error instanceof HttpError) {
    const body: ErrorBody = { error: { code: error.code, message: error.message, ...(error.issues ? { issues: error.issues } : {}) } };
    return c.json(body, error.status);
  }
  if (error instanceof FanoutError) {
    const body: ErrorBody = {
      error: { code: error.code, message: error.message, ...(error.field ? { issues: [{ field: error.field, rule: error.code, message: error.message }] } : {}) },
    };
    return c.json(body, STATUS_OF[error.code]);
  }
  if ((error as { name?: string })?.name === 'ZodError') return errorResponse(c, validationError('body', error as z.ZodError), log);
  log('request failed', { path: c.req.path, method: c.req.method, error: (error as Error)?.message, stack: (error as Error)?.stack });
  return c.json({ error: { code: 'internal', message: 'internal error' } } satisfies ErrorBody, 500);
}
