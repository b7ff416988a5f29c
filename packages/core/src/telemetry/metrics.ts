import { createNoopMeter, metrics, ValueType, type Attributes, type BatchObservableCallback, type Histogram, type Meter, type MeterProvider, type Observable } from '@opentelemetry/api';
import type { RuntimeStats } from '../operations/runtime-stats.ts';
import { LabeledCounts } from './counts.ts';
import { ATTR, DURATION_BUCKETS_S, INSTRUMENTATION_SCOPE, METRIC } from './names.ts';

/** How long a collection waits for the database's task gauges before it goes without them. */
const GAUGE_READ_TIMEOUT_MS = 5_000;

/** Distinct error codes counted per definition; more become `_OTHER`, as the conventions do. */
const MAX_ERROR_TYPES = 50;

interface Instruments {
  provider: MeterProvider;
  meter: Meter;
  /** False for the API's no-op meter (no SDK): a histogram record is skipped altogether. */
  live: boolean;
  itemDuration: Histogram;
  queueWait: Histogram;
  limitWait: Histogram;
  /** The batch callbacks and what each observes (removed when the provider changes). */
  callbacks: Array<[BatchObservableCallback, Observable[]]>;
}

/** The attributes every task and item metric has. */
export function taskAttributes(definition: string, tenant: string | null): Attributes {
  return tenant === null ? { [ATTR.definition]: definition } : { [ATTR.definition]: definition, [ATTR.tenant]: tenant };
}

/**
 * The runtime's metrics, through the OpenTelemetry metrics API. Counts are kept in memory and
 * observed when a reader collects; durations go to histograms. Without an SDK every instrument is
 * a no-op. The meter provider is looked up again on use (like pg-boss does): a meter taken from
 * the global provider before an SDK registered would stay a no-op for good.
 */
export class FanoutMetrics {
  readonly submitted = new LabeledCounts();
  readonly finished = new LabeledCounts();
  readonly settled = new LabeledCounts();
  readonly retried = new LabeledCounts();
  readonly leasesLost = new LabeledCounts();
  /** Handlers running now, per definition. */
  readonly inFlight = new Map<string, number>();
  /** Global-limit slots this process holds now, per limit. */
  readonly slotsHeld = new Map<string, number>();
  readonly #explicit: MeterProvider | undefined;
  readonly #stats: RuntimeStats;
  readonly #errorTypes = new Map<string, Set<string>>();
  readonly #gauges: Array<(observe: (instrument: string, value: number, attributes: Attributes) => void) => Promise<void> | void> = [];
  #instruments: Instruments | null = null;
  /** The database gauges' read in progress, if any. */
  #gaugeRead: Promise<void> | null = null;
  /** Histogram attributes by definition (and outcome), made once: a record per item allocates none. */
  readonly #histogramAttributes = new Map<string, Attributes>();

  constructor(stats: RuntimeStats, meterProvider?: MeterProvider) {
    this.#stats = stats;
    this.#explicit = meterProvider;
  }

  /** The instruments on the current meter provider (made again when the provider changed). */
  instruments(): Instruments {
    const provider = this.#explicit ?? metrics.getMeterProvider();
    if (this.#instruments?.provider === provider) return this.#instruments;
    for (const [callback, observables] of this.#instruments?.callbacks ?? []) this.#instruments!.meter.removeBatchObservableCallback(callback, observables);
    const meter = provider.getMeter(INSTRUMENTATION_SCOPE);
    const seconds = (name: string, description: string) =>
      meter.createHistogram(name, { description, unit: 's', advice: { explicitBucketBoundaries: [...DURATION_BUCKETS_S] } });
    const counter = (name: string, description: string, unit: string) => meter.createObservableCounter(name, { description, unit, valueType: ValueType.INT });
    const gauge = (name: string, description: string, unit: string) => meter.createObservableGauge(name, { description, unit, valueType: ValueType.INT });
    const o = {
      submitted: counter(METRIC.tasksSubmitted, 'Tasks created (a replayed idempotent submit is not counted).', '{task}'),
      finished: counter(METRIC.tasksFinished, 'Tasks that ended, by status (and stop reason), counted by the process that ended them.', '{task}'),
      settled: counter(METRIC.itemsSettled, 'Item outcomes stored, by outcome and error type.', '{item}'),
      retried: counter(METRIC.itemsRetried, 'Transient failures handed back for another attempt, by error type.', '{item}'),
      leasesLost: counter(METRIC.leasesLost, "Items whose claim this live process lost (its lease lapsed and another took the item).", '{item}'),
      recoveries: counter(METRIC.recoveries, 'What the maintenance loop repaired: lapsed claims requeued or failed, orphaned items requeued, counters recomputed.', '{item}'),
      inFlight: gauge(METRIC.itemsInFlight, 'Handlers running now in this process.', '{item}'),
      slotsInUse: gauge(METRIC.limitSlotsInUse, 'Global-limit slots held by this process now.', '{slot}'),
      slots: gauge(METRIC.limitSlots, 'Slots a limit has (its limit).', '{slot}'),
      waiting: gauge(METRIC.limitWaiting, 'Callers of this process waiting for a limit slot now.', '{call}'),
      tasksActive: gauge(METRIC.tasksActive, 'Unfinished tasks by status (from the database).', '{task}'),
      tasksOverdue: gauge(METRIC.tasksOverdue, 'Running tasks past their deadline (from the database).', '{task}'),
      tasksStalled: gauge(METRIC.tasksStalled, 'Running tasks whose settled count has not moved for the stall threshold.', '{task}'),
    };
    const callback: BatchObservableCallback = (result) => {
      const each = (instrument: Observable, counts: LabeledCounts) => {
        for (const entry of counts.entries()) result.observe(instrument, entry.value, entry.attributes);
      };
      each(o.submitted, this.submitted);
      each(o.finished, this.finished);
      each(o.settled, this.settled);
      each(o.retried, this.retried);
      each(o.leasesLost, this.leasesLost);
      const r = this.#stats.recoveries;
      result.observe(o.recoveries, r.lapsedRequeued, { [ATTR.recovery]: 'lapsed_requeued' });
      result.observe(o.recoveries, r.lapsedFailed, { [ATTR.recovery]: 'lapsed_failed' });
      result.observe(o.recoveries, r.orphansRequeued, { [ATTR.recovery]: 'orphans_requeued' });
      result.observe(o.recoveries, r.countersRepaired, { [ATTR.recovery]: 'counters_repaired' });
      for (const [definition, n] of this.inFlight) result.observe(o.inFlight, n, { [ATTR.definition]: definition });
      for (const [name, s] of this.#stats.limits) {
        const attributes = { [ATTR.limitName]: name, [ATTR.limitKind]: s.kind };
        result.observe(o.slots, s.limit, attributes);
        result.observe(o.waiting, s.waiting, attributes);
        if (s.kind === 'global') result.observe(o.slotsInUse, this.slotsHeld.get(name) ?? 0, attributes);
      }
    };
    // The task gauges read the database, in a callback of their own: when a read fails or hangs,
    // the SDK drops that callback's observations only, and every in-memory count above is still
    // collected (a scrape during a database outage must still show the failures rising).
    const database = [o.tasksActive, o.tasksOverdue, o.tasksStalled];
    const byName: Record<string, Observable> = { [METRIC.tasksActive]: o.tasksActive, [METRIC.tasksOverdue]: o.tasksOverdue, [METRIC.tasksStalled]: o.tasksStalled };
    const fromDatabase: BatchObservableCallback = async (result) => {
      // One read at a time: a read that outlived its collection's cut is not joined by another
      // (slow scrapes would pile reads up on a database that is slow already).
      if (this.#gaugeRead) return;
      const read = (async () => {
        for (const gauge of this.#gauges) {
          await gauge((instrument, value, attributes) => {
            const target = byName[instrument];
            if (target) result.observe(target, value, attributes);
          });
        }
      })();
      this.#gaugeRead = read.catch(() => {}).then(() => {
        this.#gaugeRead = null;
      });
      await withTimeout(read, GAUGE_READ_TIMEOUT_MS);
    };
    const inMemory = Object.values(o).filter((instrument) => !database.includes(instrument));
    meter.addBatchObservableCallback(callback, inMemory);
    meter.addBatchObservableCallback(fromDatabase, database);
    this.#instruments = {
      provider,
      meter,
      live: meter !== createNoopMeter(),
      itemDuration: seconds(METRIC.itemDuration, "How long an item's handler ran, by outcome."),
      queueWait: seconds(METRIC.itemQueueWait, 'How long an item waited between being due (enqueued, or its retry delay over) and its claim.'),
      limitWait: seconds(METRIC.limitWaitDuration, 'How long a call waited for a global or rate limit slot.'),
      callbacks: [
        [callback, inMemory],
        [fromDatabase, database],
      ],
    };
    return this.#instruments;
  }

  /** Adds a source of database-read gauges (`fanout.tasks.*`), read at each collection. */
  addGauges(read: (observe: (instrument: string, value: number, attributes: Attributes) => void) => Promise<void> | void): void {
    this.#gauges.push(read);
  }

  /** The error type as a metric attribute: the code, or `_OTHER` past the per-definition cap. */
  errorType(definition: string, code: string): string {
    let seen = this.#errorTypes.get(definition);
    if (!seen) this.#errorTypes.set(definition, (seen = new Set()));
    if (seen.has(code)) return code;
    if (seen.size >= MAX_ERROR_TYPES) return '_OTHER';
    seen.add(code);
    return code;
  }

  taskSubmitted(definition: string, tenant: string | null): void {
    this.submitted.add(`${definition}\u0000${tenant}`, () => taskAttributes(definition, tenant));
    this.instruments();
  }

  taskFinished(definition: string, tenant: string | null, status: string, stopReason: string | null): void {
    this.finished.add(`${definition}\u0000${tenant}\u0000${status}\u0000${stopReason}`, () => ({
      ...taskAttributes(definition, tenant),
      [ATTR.taskStatus]: status,
      ...(stopReason ? { [ATTR.stopReason]: stopReason } : {}),
    }));
  }

  itemSettled(definition: string, tenant: string | null, outcome: string, code: string | null, durationMs: number | null): void {
    const type = code === null ? null : this.errorType(definition, code);
    this.settled.add(`${definition}\u0000${tenant}\u0000${outcome}\u0000${type}`, () => ({
      ...taskAttributes(definition, tenant),
      [ATTR.outcome]: outcome,
      ...(type === null ? {} : { [ATTR.errorType]: type }),
    }));
    if (durationMs === null) return;
    const instruments = this.instruments();
    if (instruments.live) instruments.itemDuration.record(durationMs / 1000, this.#attributes(definition, outcome));
  }

  /** The attributes of a per-item histogram record: the definition, and the outcome when given. */
  #attributes(definition: string, outcome?: string): Attributes {
    const key = outcome === undefined ? definition : `${definition}\u0000${outcome}`;
    let attributes = this.#histogramAttributes.get(key);
    if (!attributes) {
      attributes = outcome === undefined ? { [ATTR.definition]: definition } : { [ATTR.definition]: definition, [ATTR.outcome]: outcome };
      // Outcomes are a handful per definition, and definitions are few: the map stays small.
      this.#histogramAttributes.set(key, attributes);
    }
    return attributes;
  }

  itemRetried(definition: string, tenant: string | null, code: string): void {
    const type = this.errorType(definition, code);
    this.retried.add(`${definition}\u0000${tenant}\u0000${type}`, () => ({ ...taskAttributes(definition, tenant), [ATTR.errorType]: type }));
  }

  leaseLost(definition: string): void {
    this.leasesLost.add(definition, () => ({ [ATTR.definition]: definition }));
  }

  queueWait(definition: string, ms: number): void {
    const instruments = this.instruments();
    if (instruments.live) instruments.queueWait.record(Math.max(0, ms) / 1000, this.#attributes(definition));
  }

  handlerStarted(definition: string): void {
    this.inFlight.set(definition, (this.inFlight.get(definition) ?? 0) + 1);
  }

  handlerEnded(definition: string): void {
    this.inFlight.set(definition, (this.inFlight.get(definition) ?? 1) - 1);
  }

  limitWaited(name: string, kind: 'global' | 'rate', ms: number): void {
    this.instruments().limitWait.record(ms / 1000, { [ATTR.limitName]: name, [ATTR.limitKind]: kind });
  }

  slotTaken(name: string, delta: 1 | -1): void {
    this.slotsHeld.set(name, (this.slotsHeld.get(name) ?? 0) + delta);
  }
}

/** `work`, or a rejection once `ms` passed (the work itself goes on). */
async function withTimeout(work: Promise<void> | void, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([work, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`the task gauges were not read within ${ms} ms`)), ms).unref()))]);
  } finally {
    clearTimeout(timer);
  }
}
