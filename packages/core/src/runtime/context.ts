import type { PgBoss } from 'pg-boss';
import type { AnyFanoutDefinition, LimitsAccess } from '../define/define-fanout.ts';
import type { FanoutEvents } from '../events/events.ts';
import type { EnqueueItems, FanoutStore, SettleResult, SettledTask, TaskCounts } from '../store/types.ts';
import type { RuntimeStats } from '../operations/runtime-stats.ts';
import type { FanoutTelemetry } from '../telemetry/telemetry.ts';
import type { ItemLogBuffer } from './item-log-buffer.ts';
import type { Logger } from './logger.ts';

export interface WorkerSettings {
  concurrency: number;
  batchSize: number;
  leaseMs: number;
  controlPollMs: number;
  pollingIntervalSeconds: number;
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
  /** Enqueues child jobs inside a store transaction. */
  enqueueChildren: EnqueueItems;
  /** Announces what a settle (or stop, or reconcile) did: events, fan-in, failure tolerance. */
  afterSettle(result: SettleResult): void;
  announceTask(task: SettledTask): void;
  /** Emits a task's ending and delivers it to the durable listeners; records it as announced when they took it. */
  announceEnding(task: TaskCounts): Promise<void>;
  /** Logs a background failure (with `fields`: the ids it is about) and emits it on `error`. */
  reportError(error: unknown, context: string, fields?: Record<string, unknown>): void;
  /** Whether the task's manager job can still run (queued, active, or waiting for a retry). */
  managerAlive(task: TaskCounts): Promise<boolean>;
  /** Enqueues jobs again for a running task's pending items when none of its jobs is queued. */
  requeueOrphans(task: TaskCounts): Promise<number>;
  /** Refreshes the planner statistics of a queue's job table; never throws. */
  analyzeQueue(queue: string): Promise<void>;
  limits: LimitsAccess;
  /** What this process did, for its presence reports. */
  stats: RuntimeStats;
  /** Where handlers' log lines are stored. */
  itemLogs: ItemLogBuffer;
  /** Traces and metrics. */
  telemetry: FanoutTelemetry;
}
