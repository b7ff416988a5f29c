export { defineFanout } from './define/define-fanout.ts';
export type {
  AnyFanoutDefinition,
  CheckInputContext,
  ChildQueueOptions,
  FanInContext,
  FanoutDefinition,
  FanoutDefinitionInput,
  FanoutOptions,
  FinishedTask,
  InputIssue,
  ItemContext,
  LimitsAccess,
  ListedItem,
  ListedItems,
  ManagerContext,
  ManagerQueueOptions,
} from './define/define-fanout.ts';
export { assertJobPayload, assertQueueName, MAX_JOB_PAYLOAD_BYTES } from './define/names.ts';
export { FanoutError, PermanentError, TransientError } from './errors/errors.ts';
export type { FanoutErrorCode, FanoutIssue } from './errors/errors.ts';
export { defaultClassifier, parseRetryAfter } from './errors/classify.ts';
export type { Classification, ErrorClassifier } from './errors/classify.ts';
export { FanoutEvents } from './events/events.ts';
export type { EndingEventName, EndingListener, FanoutEventMap, FanoutEventName, ItemEventBase, Listener, TaskEvent } from './events/events.ts';
export { GlobalLimit, RateLimit } from './limits/global-limit.ts';
export type { GlobalLimitOptions, RateLimitOptions, RunOptions } from './limits/global-limit.ts';
export { LocalLimit } from './limits/local-limit.ts';
export { createFanout, Fanout } from './runtime/runtime.ts';
export { nameRecurringStatements } from './runtime/boss-statements.ts';
export type { BossDb, RecurringStatementsOptions } from './runtime/boss-statements.ts';
export type { FanoutRuntimeOptions, StartOptions, SubmitOptions } from './runtime/runtime.ts';
export type { WorkerSettings } from './runtime/context.ts';
export type { MaintenanceSettings } from './runtime/maintenance.ts';
export { childLogger, consoleLogger, maskedLogger, pinoLogger, redact, redactText, silentLogger } from './runtime/logger.ts';
export { storableText, unstorableJsonEscape } from './runtime/storable.ts';
export type { ConsoleLoggerOptions, Logger, PinoLike } from './runtime/logger.ts';
export { ATTR, DURATION_BUCKETS_S, FanoutTelemetry, INSTRUMENTATION_SCOPE, LabeledCounts, METRIC, SPAN } from './telemetry/index.ts';
export type { TaskAttention, TelemetryOptions, TraceCarrier } from './telemetry/index.ts';
export { isTerminalTaskStatus, taskCountsOf, TERMINAL_TASK_STATUSES } from './store/types.ts';
export { uuidv7 } from './store/ids.ts';
export type * from './store/types.ts';
export { BUCKET_MS, RuntimeStats } from './operations/runtime-stats.ts';
export type { LimitStats, RecoveryCounts } from './operations/runtime-stats.ts';
export { DURATION_BOUNDS_MS, durationSlot, histogramQuantile } from './operations/durations.ts';
export type { LimitObserver } from './limits/global-limit.ts';
export { LOST_AFTER_MS, operationsSnapshot } from './operations/snapshot.ts';
export type { OperationsSnapshot } from './operations/snapshot.ts';
