import type { PgBoss } from 'pg-boss';
import type { AnyFanoutDefinition, LimitsAccess } from '../define/define-fanout.ts';
import type { FanoutEvents } from '../events/events.ts';
import type { EnqueueWork, FanoutStore, SettleResult, SettledTask, TaskCounts } from '../store/types.ts';
import type { RuntimeStats } from '../operations/runtime-stats.ts';
import type { FanoutTelemetry } from '../telemetry/telemetry.ts';
import type { ItemLogBuffer } from './item-log-buffer.ts';
import type { Logger } from './logger.ts';

export interface WorkerSettings {
  /** Handlers in flight in this process. */
  concurrency: number;
  /** The most items this process claims at once, in one statement (never more than it has room for). */
  batchSize: number;
  leaseMs: number;
  controlPollMs: number;
  pollingIntervalSeconds: number;
  /** Manager jobs (dispatches) in flight in this process. */
  managerConcurrency: number;
  /** Lease of a global-limit slot (renewed every third of it while held). */
  limitLeaseMs: number;
}

/** What the runtime's parts share. Internal. */
export interface RuntimeContext {
  boss: PgBoss;
  store: FanoutStore;
  events: FanoutEvents;
  logger: Logger;
  settings: WorkerSettings;
  /** Aborted when the runtime stops. */
  shutdown: AbortSignal;
  definition(kind: string): AnyFanoutDefinition;
  /**
   * Runs one store call that makes items runnable with the `enqueue` that gives their tenants the
   * jobs that take them, inside the store's transaction, then tops up after the commit what the
   * transaction could not (see `Fanout.#enqueuer`).
   */
  withEnqueuer<T>(call: (enqueue: EnqueueWork) => Promise<T>): Promise<T>;
  /** Announces what a settle (or stop, or reconcile) did: events, fan-in, failure tolerance. */
  afterSettle(result: SettleResult): void;
  /**
   * Announces a task's ending (when it finished) and runs its fan-in. `stopped`: a stop just took
   * it out of `running` (it is stopping or ended), so its tenant's next task may run under a cap.
   */
  announceTask(task: SettledTask, stopped?: boolean): void;
  /** Emits a task's ending and delivers it to the durable listeners; records it as announced when they took it. */
  announceEnding(task: TaskCounts): Promise<void>;
  /** Logs a background failure (with `fields`: the ids it is about) and emits it on `error`. */
  reportError(error: unknown, context: string, fields?: Record<string, unknown>): void;
  /** Whether the task's manager job can still run (queued, active, or waiting for a retry). */
  managerAlive(task: TaskCounts): Promise<boolean>;
  /** Tops up the jobs of a quiet running task's tenant when it has pending items; returns whether it had. */
  requeueOrphans(task: TaskCounts): Promise<boolean>;
  /** Refreshes the planner statistics of the item table once `added` items are in; never throws. */
  refreshStatistics(added: number): Promise<void>;
  limits: LimitsAccess;
  /** What this process did, for its presence reports. */
  stats: RuntimeStats;
  /** Where handlers' log lines are stored. */
  itemLogs: ItemLogBuffer;
  /** Traces and metrics. */
  telemetry: FanoutTelemetry;
}
