import type { MiddlewareHandler } from 'hono';

/** An API answer is data, never a page: it loads nothing and no site may frame it. */
export const API_CONTENT_SECURITY_POLICY = "default-src 'none'; frame-ancestors 'none'";

/**
 * Middleware for API routes: answers are not framed by other sites (clickjacking of cancel and
 * retry), not sniffed as another type, not stored by browsers or proxies (tenant data), and do
 * not leak their URL to other origins.
 */
export function apiSecurityHeaders(): MiddlewareHandler {
  return async (c, next) => {
    await next();
    const h = c.res.headers;
    h.set('content-security-policy', API_CONTENT_SECURITY_POLICY);
    h.set('x-content-type-options', 'nosniff');
    h.set('x-frame-options', 'DENY');
    h.set('referrer-policy', 'no-referrer');
    h.set('cache-control', 'no-store');
  };
}

/**
 * Middleware for a whole server (the console, its files, unknown paths): the same protections,
 * added only where a route did not set its own (the console's page has its own policy, its
 * files their caching).
 */
export function defaultSecurityHeaders(): MiddlewareHandler {
  return async (c, next) => {
    await next();
    const h = c.res.headers;
    if (!h.has('content-security-policy')) h.set('content-security-policy', API_CONTENT_SECURITY_POLICY);
    if (!h.has('x-content-type-options')) h.set('x-content-type-options', 'nosniff');
    if (!h.has('x-frame-options')) h.set('x-frame-options', 'DENY');
    if (!h.has('referrer-policy')) h.set('referrer-policy', 'no-referrer');
    if (!h.has('cache-control')) h.set('cache-control', 'no-store');
  };
}
