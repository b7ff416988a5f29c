import { context, defaultTextMapGetter, defaultTextMapSetter, propagation, ROOT_CONTEXT, trace, type Context, type SpanContext, type TextMapPropagator } from '@opentelemetry/api';

/** A trace context as a job carries it (`traceparent`, and whatever else the propagator writes). */
export type TraceCarrier = Record<string, string>;

// Job payloads stay small (ids only, < 1 KB): a carrier bigger than this (a large baggage) is cut
// to the trace context proper.
const MAX_CARRIER_CHARS = 384;

/** The active trace context as a carrier, or null when there is none to propagate (no SDK). */
export function injectCarrier(propagator: TextMapPropagator | undefined, ctx: Context = context.active()): TraceCarrier | null {
  const spanContext = trace.getSpanContext(ctx);
  if (!spanContext) return null;
  const carrier: TraceCarrier = {};
  (propagator ?? propagation).inject(ctx, carrier, defaultTextMapSetter);
  // With no propagator registered (an app that gave only a tracer provider) the trace still
  // travels: the W3C `traceparent` is written here.
  if (carrier.traceparent === undefined && trace.isSpanContextValid(spanContext)) carrier.traceparent = traceparentOf(spanContext);
  const keys = Object.keys(carrier);
  if (keys.length === 0) return null;
  if (JSON.stringify(carrier).length > MAX_CARRIER_CHARS) {
    return carrier.traceparent && carrier.traceparent.length < MAX_CARRIER_CHARS ? { traceparent: carrier.traceparent } : null;
  }
  return carrier;
}

// The items of one page carry the same context: the last one read is kept.
let lastCarrier: { key: string; propagator: TextMapPropagator | undefined; ctx: Context | null } | null = null;

/** The context a carrier holds (ROOT_CONTEXT plus it), or null when it holds no valid span. */
export function extractCarrier(propagator: TextMapPropagator | undefined, carrier: unknown): Context | null {
  if (!carrier || typeof carrier !== 'object') return null;
  const keys = Object.keys(carrier);
  const key = keys.length === 1 && keys[0] === 'traceparent' ? String((carrier as TraceCarrier).traceparent) : null;
  if (key !== null && lastCarrier?.key === key && lastCarrier.propagator === propagator) return lastCarrier.ctx;
  const ctx = extract(propagator, carrier as TraceCarrier);
  if (key !== null) lastCarrier = { key, propagator, ctx };
  return ctx;
}

function extract(propagator: TextMapPropagator | undefined, carrier: TraceCarrier): Context | null {
  const ctx = (propagator ?? propagation).extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
  const spanContext = trace.getSpanContext(ctx);
  if (spanContext && trace.isSpanContextValid(spanContext)) return ctx;
  // The propagator read nothing (none registered): the `traceparent` is read here.
  const parsed = typeof carrier.traceparent === 'string' ? parseTraceparent(carrier.traceparent) : null;
  return parsed ? trace.setSpanContext(ROOT_CONTEXT, parsed) : null;
}

/** A span context as a W3C `traceparent` (version 00). */
function traceparentOf(spanContext: SpanContext): string {
  return `00-${spanContext.traceId}-${spanContext.spanId}-${(spanContext.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:-.*)?$/;

/** The remote span context a W3C `traceparent` holds, or null when it is not a valid one. */
function parseTraceparent(value: string): SpanContext | null {
  const match = TRACEPARENT.exec(value.trim());
  if (!match || match[1] === 'ff' || (match[1] === '00' && value.trim().length !== 55)) return null;
  const spanContext: SpanContext = { traceId: match[2]!, spanId: match[3]!, traceFlags: parseInt(match[4]!, 16), isRemote: true };
  return trace.isSpanContextValid(spanContext) ? spanContext : null;
}

/** The span context of the span active in `ctx`, when it is a valid one. */
export function activeSpanContext(ctx: Context = context.active()): SpanContext | null {
  const spanContext = trace.getSpanContext(ctx);
  return spanContext && trace.isSpanContextValid(spanContext) ? spanContext : null;
}
