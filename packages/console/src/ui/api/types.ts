// The shapes of the console's HTTP API (see the console contract): what the server answers.

export type TaskStatus = 'queued' | 'running' | 'stopping' | 'completed' | 'failed' | 'cancelled';
export type StopReason = null | 'cancelled' | 'failure_threshold' | 'deadline' | 'manager_failed';

export interface TaskView {
  id: string;
  kind: string;
  status: TaskStatus;
  stopReason: StopReason;
  error: string | null;
  summary: string | null;
  total: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  round: number;
  roundStartedAt: string | null;
  roundSettledAtStart: number;
  dispatched: boolean;
  /** It stopped before all its items were listed: its counts are of the listed ones; no retry. */
  dispatchCut?: boolean;
  createdAt: string;
  startedAt: string | null;
  completedAt: string | null;
  deadlineAt: string | null;
  archivedAt: string | null;
  purgedAt: string | null;
  priority: number;
}

export interface TaskPage {
  tasks: TaskView[];
  nextCursor: string | null;
}

export interface TaskSummary {
  counts: { queued: number; running: number; stopping: number; completed: number; failed: number; cancelled: number; archived: number };
}

/** Items of one task by state, right now. */
export interface ItemCounts {
  queued: number;
  waitingRetry: number;
  nextRetryAt: string | null;
  running: number;
  succeeded: number;
  failed: number;
  retryableFailed: number;
  cancelled: number;
  total: number;
}

export type ItemStatus = 'pending' | 'running' | 'succeeded' | 'failed' | 'cancelled';
export type ItemFilter = ItemStatus | 'waiting';

export interface ItemError {
  code: string;
  message: string;
  attempt?: number;
  retryable?: boolean;
}

export interface ItemView {
  id: string;
  key: string;
  seq: number;
  status: ItemStatus;
  attempts: number;
  round: number;
  snapshot: unknown;
  result: unknown;
  error: ItemError | null;
  startedAt: string | null;
  finishedAt: string | null;
  durationMs: number | null;
  nextAttemptAt: string | null;
}

export interface ItemPage {
  items: ItemView[];
  nextCursor: string | null;
}

export interface LogLine {
  at: string;
  attempt: number;
  message: string;
  data?: Record<string, unknown>;
}

export interface FailureGroup {
  code: string;
  count: number;
  retryable: number;
  message: string;
}

export interface Me {
  tenant: string;
  role: 'user' | 'operator';
}

export interface OpsSnapshot {
  at: string;
  queues: { name: string; queued: number; active: number; deferred: number; deadLetter: number }[];
  workers: {
    id: string;
    role: 'worker' | 'api' | 'local';
    host: string;
    pid: number;
    startedAt: string;
    lastSeenAt: string;
    alive: boolean;
    concurrency: number;
    inFlight: number;
  }[];
  limits: { name: string; kind: 'global' | 'rate'; limit: number; inUse: number; waiting: number }[];
  series: OpsPoint[];
  recoveries: { lapsedRequeued: number; lapsedFailed: number; orphansRequeued: number; countersRepaired: number; deadLettered: number };
  /** Tasks to look at (the same figures as the `fanout_tasks_*` metrics); null when not watched. */
  attention: {
    active: { queued: number; running: number; stopping: number };
    overdue: { id: string; kind: string; tenant: string | null; deadlineAt: string }[];
    stalled: { id: string; kind: string; tenant: string | null; settled: number; total: number; quietMs: number }[];
  } | null;
  /** Failed and retried items by error type since the processes listed started. */
  errors: { code: string; failed: number; retried: number }[];
  leasesLost: number;
  live: { sseClients: number; notifyFailures: number };
}

export interface OpsPoint {
  at: string;
  settled: number;
  failed: number;
  p50Ms: number | null;
  p95Ms: number | null;
}

/** The counters a task event carries. */
export interface EventCounts {
  status: TaskStatus;
  stopReason: StopReason;
  total: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  round: number;
  dispatched: boolean;
}

export type TaskEventType = 'task.submitted' | 'task.progress' | 'task.completed' | 'task.failed' | 'task.cancelled';

export interface TaskStateEvent {
  type: TaskEventType;
  taskId: string;
  tenant: string | null;
  kind: string;
  at: number;
  counts: EventCounts;
}

export interface ItemFailedEvent {
  type: 'item.failed';
  taskId: string;
  tenant: string | null;
  kind: string;
  at: number;
  itemId: string;
  key: string;
  error: { code: string; message: string; attempt?: number };
  willRetry: boolean;
}

export interface ItemLogEvent {
  type: 'item.log';
  taskId: string;
  tenant: string | null;
  kind: string;
  at: number;
  itemId: string;
  key: string;
  message: string;
  data?: Record<string, unknown>;
}

export interface ResyncEvent {
  type: 'resync';
  at: number;
}

export type ConsoleEvent = TaskStateEvent | ItemFailedEvent | ItemLogEvent | ResyncEvent;
