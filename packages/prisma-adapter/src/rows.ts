import { type ItemError, type ItemRecord, type SettledTask, type StopReason, type TaskCounts, type TaskRecord, type TaskStatus } from '@fanout/core';

/** A `fanout_task` row as `SELECT *` returns it. */
export interface TaskRow {
  id: string;
  kind: string;
  tenant: string | null;
  input: unknown;
  status: string;
  stop_reason: string | null;
  error: string | null;
  total: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  round: number;
  max_attempts: number;
  max_failures: number | null;
  max_failure_ratio: number | null;
  deadline_at: Date | null;
  dispatched_at: Date | null;
  dispatch_cut: boolean;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  updated_at: Date;
  summary: string | null;
  archived_at: Date | null;
  round_started_at: Date | null;
  round_settled_at_start: number;
  idempotency_key: string | null;
  request_hash: string | null;
  priority: number;
  purged_at: Date | null;
}

export interface ItemRow {
  id: string;
  task_id: string;
  seq: number;
  key: string;
  snapshot: unknown;
  status: string;
  attempts: number;
  result: unknown;
  error: unknown;
  round: number;
  started_at: Date | null;
  finished_at: Date | null;
  retry_at: Date | null;
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/** `completed`, `failed` or `cancelled`: the task is finished and no statement moves it any more. */
export const isTerminalStatus = (status: string): boolean => TERMINAL.has(status);

/** The columns a settle needs back: counters and tolerance, not the task's input. */
export type CountsRow = Pick<
  TaskRow,
  'id' | 'kind' | 'tenant' | 'status' | 'stop_reason' | 'total' | 'succeeded' | 'failed' | 'cancelled' | 'round' | 'dispatched_at' | 'max_failures' | 'max_failure_ratio'
>;

export const toCounts = (row: CountsRow): TaskCounts => ({
  id: row.id,
  kind: row.kind,
  tenant: row.tenant,
  status: row.status as TaskStatus,
  stopReason: row.stop_reason as StopReason | null,
  total: row.total,
  succeeded: row.succeeded,
  failed: row.failed,
  cancelled: row.cancelled,
  round: row.round,
  dispatched: row.dispatched_at !== null,
});

export function toTask(row: TaskRow): TaskRecord {
  const { dispatched: _dispatched, ...counts } = toCounts(row);
  return {
    ...counts,
    input: row.input,
    error: row.error,
    maxAttempts: row.max_attempts,
    maxFailures: row.max_failures,
    maxFailureRatio: row.max_failure_ratio,
    deadlineAt: row.deadline_at,
    dispatchedAt: row.dispatched_at,
    dispatchCut: row.dispatch_cut,
    createdAt: row.created_at,
    startedAt: row.started_at,
    completedAt: row.completed_at,
    updatedAt: row.updated_at,
    summary: row.summary,
    archivedAt: row.archived_at,
    roundStartedAt: row.round_started_at,
    roundSettledAtStart: row.round_settled_at_start,
    priority: row.priority,
    purgedAt: row.purged_at,
  };
}

/**
 * Counters of a task a statement just updated. `finished` is exact: a statement that settles
 * items (or stops, or finishes dispatch) only ever acts on an unfinished task, because a
 * finished task has every item settled; so a terminal status in its result was set by it.
 */
export function toSettled(row: CountsRow, wasTerminal = false): SettledTask {
  const overFailureLimit =
    (row.max_failures !== null && row.failed > row.max_failures) ||
    (row.max_failure_ratio !== null && row.dispatched_at !== null && row.total > 0 && row.failed > row.max_failure_ratio * row.total);
  return { ...toCounts(row), finished: !wasTerminal && TERMINAL.has(row.status), overFailureLimit };
}

export function toItem(row: ItemRow): ItemRecord {
  return {
    id: row.id,
    taskId: row.task_id,
    seq: row.seq,
    key: row.key,
    snapshot: row.snapshot,
    status: row.status as ItemRecord['status'],
    attempts: row.attempts,
    result: row.result,
    error: (row.error as ItemError | null) ?? null,
    round: row.round,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    retryAt: row.retry_at,
  };
}
