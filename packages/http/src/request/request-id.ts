import { randomUUID } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';

/** A client's own id is kept when it is short visible ASCII; anything else could forge log lines. */
const CLIENT_ID = /^[\x21-\x7e]{1,200}$/;

/** The id of the request being served (set by `requestId()`), or null outside it. */
export function requestIdOf(c: Context): string | null {
  return (c.get('requestId' as never) as string | undefined) ?? null;
}

/**
 * Middleware: every request has an id, the client's `X-Request-Id` when it sent a usable one, a
 * new UUID otherwise. The response carries it back in `X-Request-Id`, a 500's body and its log
 * line name it, so an operator finds the line a user reports. Mounting it twice keeps the first id.
 */
export function requestId(): MiddlewareHandler {
  return async (c, next) => {
    let id = requestIdOf(c);
    if (!id) {
      const sent = c.req.header('x-request-id');
      id = sent && CLIENT_ID.test(sent) ? sent : randomUUID();
      c.set('requestId' as never, id as never);
    }
    await next();
    c.res.headers.set('x-request-id', id);
  };
}
