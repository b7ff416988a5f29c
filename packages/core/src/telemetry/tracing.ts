import {
  context,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
  type TextMapPropagator,
  type Tracer,
} from '@opentelemetry/api';
import type { ClaimedItem } from '../store/types.ts';
import { redactText } from '../runtime/logger.ts';
import { activeSpanContext, extractCarrier, type TraceCarrier } from './carrier.ts';
import type { FanoutMetrics } from './metrics.ts';
import { ATTR, SPAN } from './names.ts';

/** What a child job carries besides its ids: where its trace continues, and when it became due. */
export interface JobTraceFields {
  /** The trace context of the span that enqueued the job (a dispatch page, a retry). */
  trace?: TraceCarrier;
  /** When the job became due (ms since epoch, this process's clock): the queue wait starts there. */
  due?: number;
}

/** When the claim statement of a delivery ran (`performance.now()` times), and its span. */
export interface ClaimTiming {
  startedAt: number;
  endedAt: number;
  /** The `fanout.claim` span of the delivery (null when not recorded). */
  span: SpanContext | null;
  /** The delivery's own span, read once for its items. */
  delivery: { ctx: Context; span: SpanContext } | null;
  /**
   * The parent and links of the last item of this delivery, by the context its job carried: the
   * items of one page carry the same one, so a delivery works them out once.
   */
  last?: { carried: Context | null; parent: Context; links: Link[] };
}

/** An error on a span, its message and stack with credentials masked ({@link redactText}): spans leave the process too. */
export function recordError(span: Span, error: unknown): void {
  if (!span.isRecording()) return;
  if (error instanceof Error) {
    const message = redactText(error.message);
    const code = (error as { code?: unknown }).code;
    span.recordException({
      name: error.name,
      message,
      ...(error.stack ? { stack: redactText(error.stack) } : {}),
      ...(typeof code === 'string' || typeof code === 'number' ? { code } : {}),
    });
    span.setStatus({ code: SpanStatusCode.ERROR, message });
  } else {
    span.setStatus({ code: SpanStatusCode.ERROR, message: redactText(String(error)) });
  }
}

/** Runs `fn` in a span that ends with it (error status when it throws). */
export async function inSpan<T>(tracer: Tracer, name: string, options: { attributes?: Attributes; kind?: SpanKind; links?: Link[] }, parent: Context, fn: (span: Span) => Promise<T>): Promise<T> {
  const span = tracer.startSpan(name, options, parent);
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (error) {
    recordError(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/**
 * The parent of work that a job delivered: the delivery's own span when it is in the trace the job
 * carries (pg-boss continued it: a batch of one), else the carried context, with the delivery as a
 * link (a batch of many starts a trace of its own, as the messaging conventions say).
 */
export function continuation(carried: Context | null, delivery: { ctx: Context; span: SpanContext } | null = deliveryOf(context.active())): { parent: Context; links: Link[] } {
  const carriedSpan = carried ? trace.getSpanContext(carried) : undefined;
  if (!carriedSpan) return { parent: delivery ? delivery.ctx : ROOT_CONTEXT, links: [] };
  if (delivery && delivery.span.traceId === carriedSpan.traceId) return { parent: delivery.ctx, links: [] };
  return { parent: carried!, links: delivery ? [{ context: delivery.span }] : [] };
}

/** The span of the delivery running in `ctx` (pg-boss's `process` span), if any. */
export function deliveryOf(ctx: Context): { ctx: Context; span: SpanContext } | null {
  const span = activeSpanContext(ctx);
  return span ? { ctx, span } : null;
}

/** What every item's telemetry shares (one per runtime). */
export interface ItemTelemetryDeps {
  tracer: Tracer;
  metrics: FanoutMetrics;
  propagator: TextMapPropagator | undefined;
  settling: Map<string, SpanContext>;
}

export interface FailureInfo {
  code: string;
  kind: 'transient' | 'permanent';
  retry: boolean;
  delayMs: number;
  /** Why a transient failure is not retried. */
  giveUp?: 'out_of_attempts' | 'past_deadline' | 'delay_too_long';
}

/**
 * One attempt of one item, traced and measured: a `fanout.item` span from the claim to the stored
 * outcome, active while the handler runs (its limit waits and a retry are its children). The claim
 * and the settle are statements for many items at once: each has a span of its own, linked with
 * the items it served. Without an SDK no span is started and nothing but the metrics' counting is
 * done.
 */
export class ItemTelemetry {
  readonly #tracer: Tracer;
  readonly #metrics: FanoutMetrics;
  readonly #propagator: TextMapPropagator | undefined;
  readonly #settling: Map<string, SpanContext>;
  readonly #item: ClaimedItem;
  readonly #carrier: TraceCarrier | undefined;
  readonly #span: Span | null = null;
  readonly #ctx: Context = ROOT_CONTEXT;
  readonly #recording: boolean = false;
  /** The attempt is over and its span ended (`end`); a handler no longer waited for may still run. */
  #ended = false;

  constructor(
    deps: ItemTelemetryDeps,
    /** False when no tracer provider is registered: no span is even started. */
    tracing: boolean,
    item: ClaimedItem,
    claim: ClaimTiming,
  ) {
    this.#tracer = deps.tracer;
    this.#metrics = deps.metrics;
    this.#propagator = deps.propagator;
    this.#settling = deps.settling;
    this.#item = item;
    // The job's trace fields came with the claimed row: where the trace continues, and when it was due.
    this.#carrier = item.trace ?? undefined;
    if (typeof item.dueAt === 'number') this.#metrics.queueWait(item.kind, Date.now() - (performance.now() - claim.endedAt) - item.dueAt);
    if (!tracing) return;
    const carried = extractCarrier(this.#propagator, this.#carrier);
    let last = claim.last;
    if (!last || last.carried !== carried) {
      const { parent, links } = continuation(carried, claim.delivery);
      // The SDK copies a span's links, so the items of a delivery can share one array.
      last = claim.last = { carried, parent, links: claim.span ? [...links, { context: claim.span }] : links };
    }
    const attributes: Attributes = {
      [ATTR.definition]: item.kind,
      [ATTR.taskId]: item.taskId,
      [ATTR.itemId]: item.itemId,
      [ATTR.attempt]: item.attempt,
      [ATTR.maxAttempts]: item.maxAttempts,
    };
    if (item.tenant !== null) attributes[ATTR.tenant] = item.tenant;
    const parent = last.parent;
    const span = this.#tracer.startSpan(SPAN.item, { kind: SpanKind.CONSUMER, startTime: claim.startedAt, links: last.links, attributes }, parent);
    this.#span = span;
    this.#recording = span.isRecording();
    this.#ctx = trace.setSpan(parent, span);
  }

  /**
   * Runs the handler with the item span active: its limit waits and the spans it starts itself
   * (an HTTP call, a query) are the item span's children. The attempt is one span, as a messaging
   * `process` span is one per message: a span of its own for the handler would cost every item a
   * second span for what the item span's `fanout.handler.duration_ms` already says.
   */
  async handler<T>(fn: () => Promise<T> | T): Promise<T> {
    this.#metrics.handlerStarted(this.#item.kind);
    // Timed only for a recording span (without an SDK, nothing here reads the clock).
    const started = this.#recording ? performance.now() : 0;
    try {
      return this.#span ? await context.with(this.#ctx, fn) : await fn();
    } finally {
      // (A handler no longer waited for ends after its attempt did: it counted as running until now.)
      this.#metrics.handlerEnded(this.#item.kind);
      if (this.#recording && !this.#ended) this.#span!.setAttribute(ATTR.handlerMs, Math.round(performance.now() - started));
    }
  }

  /** Runs `fn` with the item span active (a log line about the attempt then carries its trace). */
  inContext<T>(fn: () => T): T {
    return this.#span ? context.with(this.#ctx, fn) : fn();
  }

  /** The classifier's decision on a failed attempt. */
  failed(error: unknown, info: FailureInfo): void {
    if (!this.#span || !this.#recording) return;
    this.#span.setAttributes({
      [ATTR.errorType]: info.code,
      [ATTR.errorKind]: info.kind,
      [ATTR.decision]: info.retry ? 'retry' : 'fail',
      ...(info.retry ? { [ATTR.retryDelayMs]: info.delayMs } : {}),
      ...(info.giveUp ? { [ATTR.giveUpReason]: info.giveUp } : {}),
    });
    recordError(this.#span, error);
  }

  /** The attempt was cut short: its task stopped, its claim was lost, or its process is stopping. */
  aborted(why: string): void {
    if (why === 'claim_lost') this.#metrics.leaseLost(this.#item.kind);
    if (this.#span && this.#recording) this.#span.setAttribute('fanout.item.aborted', why);
  }

  /**
   * A transient failure handed back for another attempt, in a `fanout.retry` span until the release
   * is stored. The next attempt continues the task's trace context as this one did, so every
   * attempt is a sibling under the span that dispatched the task.
   */
  async retry(release: { error: { code: string }; delayMs: number; refund?: boolean }, push: () => Promise<boolean>): Promise<boolean> {
    const released = this.#recording
      ? await inSpan(
          this.#tracer,
          SPAN.retry,
          {
            attributes: {
              [ATTR.attempt]: this.#item.attempt,
              [ATTR.errorType]: release.error.code,
              [ATTR.decision]: release.refund ? 'refund' : 'retry',
              [ATTR.retryDelayMs]: release.delayMs,
            },
          },
          this.#ctx,
          async (span) => {
            const ok = await push();
            span.setAttribute(ATTR.recorded, ok);
            return ok;
          },
        )
      : await push();
    if (released && !release.refund) this.#metrics.itemRetried(this.#item.kind, this.#item.tenant, release.error.code);
    return released;
  }

  /**
   * The outcome waiting in the group commit until it is stored: the `fanout.settle` span of the
   * statement that stores it links to this item, which records how long it waited.
   */
  async settle<O extends { status: string; itemId: string }>(outcome: O, commit: { push(outcome: O): Promise<boolean> }): Promise<boolean> {
    const span = this.#span;
    if (!span || !this.#recording) return commit.push(outcome);
    const started = performance.now();
    this.#settling.set(outcome.itemId, span.spanContext());
    try {
      const ok = await commit.push(outcome);
      span.setAttributes({ [ATTR.settleWaitMs]: Math.round(performance.now() - started), [ATTR.recorded]: ok });
      return ok;
    } finally {
      this.#settling.delete(outcome.itemId);
    }
  }

  /** The outcome was stored: counted, and the item span says so. */
  settled(outcome: { status: string; error?: { code: string } | undefined }, durationMs: number | null): void {
    this.#metrics.itemSettled(this.#item.kind, this.#item.tenant, outcome.status, outcome.status === 'failed' ? (outcome.error?.code ?? 'unknown') : null, durationMs);
    if (this.#span && this.#recording) this.#span.setAttribute(ATTR.outcome, outcome.status);
  }

  /** The attempt is over (its outcome or release stored, or given up): the item span ends. */
  end(error?: unknown): void {
    this.#ended = true;
    if (!this.#span) return;
    if (error !== undefined) recordError(this.#span, error);
    this.#span.end();
  }
}
