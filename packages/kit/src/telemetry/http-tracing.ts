import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type TextMapGetter, type TracerProvider } from '@opentelemetry/api';
import type { Context as HonoContext, MiddlewareHandler } from 'hono';

const headerGetter: TextMapGetter<HonoContext> = {
  keys: (c) => [...c.req.raw.headers.keys()],
  get: (c, key) => c.req.header(key) ?? undefined,
};

/**
 * Middleware: each request in a SERVER span (HTTP semantic conventions) that continues the trace
 * of an incoming `traceparent`, so a submit's trace starts at the caller; handlers run inside it.
 * When a span is already active (the app runs the SDK's HTTP instrumentation), it only names that
 * span's route. Headers are never recorded (they carry tokens). Without an SDK it does nothing.
 */
export function traceRequests(tracerProvider?: TracerProvider): MiddlewareHandler {
  const tracer = (tracerProvider ?? trace.getTracerProvider()).getTracer('@fanout/kit');
  return async (c, next) => {
    const active = trace.getActiveSpan();
    if (active?.isRecording()) {
      await next();
      if (c.req.routePath) active.setAttribute('http.route', c.req.routePath);
      return;
    }
    const parent = propagation.extract(ROOT_CONTEXT, c, headerGetter);
    const method = c.req.method;
    const span = tracer.startSpan(
      method,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': method, 'url.path': c.req.path, 'url.scheme': new URL(c.req.url).protocol.replace(':', '') } },
      parent,
    );
    if (!span.isRecording()) {
      span.end();
      await next();
      return;
    }
    try {
      await context.with(trace.setSpan(parent, span), next);
    } catch (error) {
      span.recordException(error as Error);
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      const route = c.req.routePath;
      if (route && route !== '/*' && route !== '*') {
        span.setAttribute('http.route', route);
        span.updateName(`${method} ${route}`);
      }
      const status = c.res?.status;
      if (status) {
        span.setAttribute('http.response.status_code', status);
        if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    }
  };
}
