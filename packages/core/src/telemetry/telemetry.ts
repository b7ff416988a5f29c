import { context, ProxyTracerProvider, ROOT_CONTEXT, SpanKind, trace, type Link, type MeterProvider, type SpanContext, type TextMapPropagator, type Tracer, type TracerProvider } from '@opentelemetry/api';
import type { LimitObserver } from '../limits/global-limit.ts';
import type { RuntimeStats } from '../operations/runtime-stats.ts';
import type { ClaimedItem, FanoutStore, NewItem, SettledTask, TaskRecord } from '../store/types.ts';
import { extractCarrier, injectCarrier, type TraceCarrier } from './carrier.ts';
import { FanoutMetrics } from './metrics.ts';
import { ATTR, INSTRUMENTATION_SCOPE, SPAN } from './names.ts';
import { TaskGauges, type TaskAttention } from './task-gauges.ts';
import { continuation, deliveryOf, inSpan, ItemTelemetry, recordError, type ClaimTiming, type ItemTelemetryDeps, type JobTraceFields } from './tracing.ts';

// The API's global tracer provider is a proxy that delegates to this no-op provider until an SDK
// registers one (an unset proxy hands out its no-op delegate).
const NOOP_TRACER_PROVIDER = new ProxyTracerProvider().getDelegate();

/** Whether a provider is an SDK's, or a proxy delegating to one. */
function isRegistered(provider: TracerProvider): boolean {
  const delegate = provider instanceof ProxyTracerProvider ? provider.getDelegate() : provider;
  return delegate !== NOOP_TRACER_PROVIDER;
}

export interface TelemetryOptions {
  /** Where spans go. @default the global tracer provider (nothing is recorded until an SDK registers one) */
  tracerProvider?: TracerProvider;
  /** Where metrics go. @default the global meter provider */
  meterProvider?: MeterProvider;
  /** How trace context is written into jobs and read back. @default the global propagator */
  propagator?: TextMapPropagator;
  /**
   * A running task whose settled count has not moved this long counts in `fanout.tasks.stalled`;
   * false reads no task gauges from the database. @default 600000 (10 minutes)
   */
  stalledAfterMs?: number | false;
}

/**
 * The runtime's traces and metrics (OpenTelemetry API only: the app chooses the SDK). One per
 * runtime; its parts are called from a few points of the runtime (submit, manager, child runner,
 * limits, endings).
 */
export class FanoutTelemetry {
  readonly tracer: Tracer;
  readonly metrics: FanoutMetrics;
  readonly options: TelemetryOptions;
  readonly #propagator: TextMapPropagator | undefined;
  /** The spans of items whose outcome waits in the group commit, for the settle's links. */
  readonly #settling = new Map<string, SpanContext>();
  readonly #stats: RuntimeStats;
  #taskGauges: TaskGauges | null = null;
  /** What every item's telemetry shares. */
  readonly #itemDeps: ItemTelemetryDeps;

  constructor(stats: RuntimeStats, options: TelemetryOptions = {}) {
    this.options = options;
    this.#stats = stats;
    // What this process counted, in its presence reports: the console's operations view adds them up.
    stats.reporters.push(() => ({ telemetry: this.counters() }));
    this.tracer = (options.tracerProvider ?? trace.getTracerProvider()).getTracer(INSTRUMENTATION_SCOPE);
    this.metrics = new FanoutMetrics(stats, options.meterProvider);
    this.#propagator = options.propagator;
    this.#itemDeps = { tracer: this.tracer, metrics: this.metrics, propagator: this.#propagator, settling: this.#settling };
  }

  /** Reads the task gauges of these definitions from the store at each collection (unless turned off). */
  watchTasks(store: FanoutStore, kinds: readonly string[]): void {
    if (this.options.stalledAfterMs === false || kinds.length === 0) return;
    const gauges = (this.#taskGauges = new TaskGauges(store, kinds, this.options.stalledAfterMs ?? 600_000));
    this.metrics.addGauges(async (observe) => void (await gauges.read(observe)));
    this.metrics.instruments();
  }

  /** The tasks an operator should look at now (read from the store; the same figures as the task gauges). */
  async taskAttention(): Promise<TaskAttention | null> {
    return this.#taskGauges ? this.#taskGauges.read() : null;
  }

  /** This process's counts since it started: failures and retries by error type, lost leases. */
  counters(): { errors: Record<string, { failed: number; retried: number }>; leasesLost: number } {
    const errors: Record<string, { failed: number; retried: number }> = {};
    const entry = (code: unknown) => (errors[String(code)] ??= { failed: 0, retried: 0 });
    for (const e of this.metrics.settled.entries()) if (e.attributes[ATTR.outcome] === 'failed') entry(e.attributes[ATTR.errorType]).failed += e.value;
    for (const e of this.metrics.retried.entries()) entry(e.attributes[ATTR.errorType]).retried += e.value;
    return { errors, leasesLost: this.metrics.leasesLost.sum() };
  }

  /** A submit: the task created and its manager job enqueued, in a `fanout.submit` span. */
  submit<T extends TaskRecord & { replayed: boolean }>(definition: string, tenant: string | null, fn: () => Promise<T>): Promise<T> {
    return inSpan(this.tracer, SPAN.submit, { attributes: { [ATTR.definition]: definition, ...(tenant === null ? {} : { [ATTR.tenant]: tenant }) } }, context.active(), async (span) => {
      const task = await fn();
      span.setAttribute(ATTR.taskId, task.id);
      if (!task.replayed) this.metrics.taskSubmitted(definition, tenant);
      return task;
    });
  }

  /**
   * A retry of a finished task's failed items, in a `fanout.retry_failed` span: `fn` is given the
   * span's context to store on the task, so the new round's items continue the retry's trace (a
   * retry days after the submit is a trace of its own, not part of the submit's).
   */
  retryFailed<T extends { retried: number }>(definition: string, taskId: string, fn: (trace: Record<string, string> | null) => Promise<T>): Promise<T> {
    return inSpan(this.tracer, SPAN.retryFailed, { attributes: { [ATTR.definition]: definition, [ATTR.taskId]: taskId } }, context.active(), async (span) => {
      const result = await fn(this.jobFields().trace ?? null);
      span.setAttribute(ATTR.retried, result.retried);
      return result;
    });
  }

  /** The trace context to store on a job enqueued now, if there is one. */
  jobFields(): JobTraceFields {
    const carrier = injectCarrier(this.#propagator);
    return carrier ? { trace: carrier } : {};
  }

  /** The manager's work on a task, in a `fanout.dispatch` span continuing the submit's trace. */
  dispatch<T>(definition: string, job: { taskId: string } & JobTraceFields, fn: () => Promise<T>): Promise<T> {
    const { parent, links } = continuation(extractCarrier(this.#propagator, job.trace));
    return inSpan(this.tracer, SPAN.dispatch, { attributes: { [ATTR.definition]: definition, [ATTR.taskId]: job.taskId }, links }, parent, () => fn());
  }

  /**
   * One page of the dispatch, in a `fanout.dispatch.page` span (its child jobs carry it). Items that
   * failed validation at dispatch are stored failed: they are counted as settled when the page went
   * in whole (a retried manager's page that skips keys counted them the first time).
   */
  page<T extends { inserted: number }>(task: Pick<TaskRecord, 'kind' | 'tenant'>, number: number, items: readonly NewItem[], fn: () => Promise<T>): Promise<T> {
    return inSpan(this.tracer, SPAN.page, { attributes: { [ATTR.pageNumber]: number, [ATTR.pageItems]: items.length } }, context.active(), async (span) => {
      const result = await fn();
      span.setAttribute(ATTR.inserted, result.inserted);
      if (result.inserted === items.length) {
        for (const item of items) if (item.error) this.metrics.itemSettled(task.kind, task.tenant, 'failed', item.error.code, null);
      }
      return result;
    });
  }

  /** Starts the `fanout.claim` span of a delivery (in the delivery's trace); the items link to it. */
  claimStarted(batchSize: number): { ended(claimed: number): ClaimTiming } {
    const startedAt = performance.now();
    if (!this.tracing()) return { ended: () => ({ startedAt, endedAt: performance.now(), span: null, delivery: null }) };
    const delivery = deliveryOf(context.active());
    const span = this.tracer.startSpan(SPAN.claim, { startTime: startedAt, attributes: { [ATTR.batchSize]: batchSize } });
    return {
      ended: (claimed) => {
        const endedAt = performance.now();
        const recording = span.isRecording();
        if (recording) span.setAttribute(ATTR.claimed, claimed);
        span.end(endedAt);
        return { startedAt, endedAt, span: recording ? span.spanContext() : null, delivery };
      },
    };
  }

  /**
   * Whether a tracer provider is given or registered: without one no span is started at all (the
   * API's no-op spans cost little each, but an item makes several). Looked up on each use, like the
   * meter provider: an SDK registered after the runtime started is picked up.
   */
  tracing(): boolean {
    return this.options.tracerProvider !== undefined || isRegistered(trace.getTracerProvider());
  }

  /** The telemetry of one claimed item's attempt. */
  item(item: ClaimedItem, claim: ClaimTiming): ItemTelemetry {
    return new ItemTelemetry(this.#itemDeps, this.tracing(), item, claim);
  }

  /**
   * A group commit storing outcomes, in a `fanout.settle` span of its own (it serves items of any
   * task), linked with the spans of the items it stores (the first 128).
   */
  settleBatch<T>(itemIds: readonly string[], fn: () => Promise<T>): Promise<T> {
    if (this.#settling.size === 0) return fn();
    const links: Link[] = [];
    for (const id of itemIds) {
      const linked = this.#settling.get(id);
      if (linked) links.push({ context: linked });
      if (links.length >= 128) break;
    }
    return inSpan(this.tracer, SPAN.settle, { attributes: { [ATTR.batchSize]: itemIds.length }, links }, ROOT_CONTEXT, () => fn());
  }

  /**
   * A limit's observer that also traces each wait (`fanout.limit.wait`, a child of the handler
   * that waits), measures it, and counts the global slots this process holds.
   */
  limitObserver(base: LimitObserver, name: string, kind: 'global' | 'rate'): LimitObserver {
    const { tracer, metrics } = this;
    return {
      waitStarted: () => base.waitStarted(),
      waitEnded: (waitedMs) => {
        base.waitEnded(waitedMs);
        metrics.limitWaited(name, kind, waitedMs);
      },
      waitSpan: () => {
        const span = tracer.startSpan(SPAN.limitWait, { attributes: { [ATTR.limitName]: name, [ATTR.limitKind]: kind } });
        return {
          end: (waitedMs, error) => {
            if (span.isRecording()) {
              span.setAttribute(ATTR.waitedMs, Math.round(waitedMs));
              if (error !== undefined) recordError(span, error);
            }
            span.end();
          },
        };
      },
      ...(kind === 'global' ? { acquired: () => metrics.slotTaken(name, 1), released: () => metrics.slotTaken(name, -1) } : {}),
    };
  }

  /** A task this process ended (its statement finished it): counted by status. */
  taskFinished(task: SettledTask): void {
    if (task.finished) this.metrics.taskFinished(task.kind, task.tenant, task.status, task.stopReason);
  }

  /** A fan-in hook run, in a `fanout.fan_in` span of its own trace (it runs on whichever process finished the task). */
  fanIn<T>(task: TaskRecord, fn: () => Promise<T>): Promise<T> {
    const attributes = { [ATTR.definition]: task.kind, [ATTR.taskId]: task.id, [ATTR.round]: task.round, ...(task.tenant === null ? {} : { [ATTR.tenant]: task.tenant }) };
    return inSpan(this.tracer, SPAN.fanIn, { kind: SpanKind.INTERNAL, attributes }, ROOT_CONTEXT, () => fn());
  }
}
