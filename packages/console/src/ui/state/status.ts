import type { ItemCounts, ItemView, TaskView } from '../api/types.ts';
import { formatCount } from './format.ts';
import { isTerminal, settledOf } from './task-merge.ts';

export type Tone = 'neutral' | 'active' | 'ok' | 'warn' | 'bad' | 'muted';

export interface StatusPresentation {
  /** The status word: `running`, `completed`, ... */
  label: string;
  /** The badge's style; never green for a task with failures. */
  tone: Tone;
  /** What qualifies it: `2 failed`, `too many failures`, `dispatching`. */
  note: string | null;
}

const STOP_NOTES: Record<string, string> = {
  cancelled: 'cancel requested',
  failure_threshold: 'too many failures',
  deadline: 'deadline passed',
  manager_failed: 'could not dispatch',
};

/** A task that stopped before all its items were listed: its counts are of the listed ones. */
const NOT_ALL_LISTED = 'stopped before all its items were listed';

/** How a task's status is shown: an honest word, a tone, and what qualifies it. */
export function presentStatus(task: TaskView): StatusPresentation {
  switch (task.status) {
    case 'queued':
      return { label: 'queued', tone: 'neutral', note: null };
    case 'running':
      return { label: 'running', tone: 'active', note: task.dispatched ? null : 'dispatching' };
    case 'stopping':
      return { label: 'stopping', tone: 'warn', note: task.stopReason ? (STOP_NOTES[task.stopReason] ?? null) : null };
    case 'completed':
      if (task.failed === 0) return { label: 'completed', tone: 'ok', note: null };
      if (task.succeeded === 0) return { label: 'completed', tone: 'bad', note: `all ${formatCount(task.failed)} failed` };
      return { label: 'completed', tone: 'warn', note: `${formatCount(task.failed)} failed` };
    case 'failed': {
      const why = task.stopReason && task.stopReason !== 'cancelled' ? (STOP_NOTES[task.stopReason] ?? null) : null;
      return { label: 'failed', tone: 'bad', note: task.dispatchCut ? [why, NOT_ALL_LISTED].filter(Boolean).join(', ') : why };
    }
    case 'cancelled':
      return { label: 'cancelled', tone: 'muted', note: task.dispatchCut ? NOT_ALL_LISTED : null };
  }
}

/**
 * The figure beside the progress bar. A percentage only where it is true: a completed task
 * shows 100%, a running one never does; a cancelled or failed task shows settled/total, since its
 * items were not all done; a queued one shows `queued`.
 */
export function progressLabel(task: TaskView): string {
  const settled = settledOf(task);
  if (task.status === 'queued') return 'queued';
  if (task.status === 'cancelled' || task.status === 'failed' || task.status === 'stopping') return `${formatCount(settled)}/${formatCount(task.total)}`;
  if (task.status === 'completed') return '100%';
  if (task.total === 0) return 'starting';
  const pct = Math.floor((settled / task.total) * 100);
  return `${Math.min(pct, 99)}%`;
}

/** The progress bar's text for assistive technology: "42 of 60 settled: 40 succeeded, 2 failed". */
export function progressText(task: TaskView): string {
  const parts = [`${formatCount(task.succeeded)} succeeded`];
  if (task.failed > 0) parts.push(`${formatCount(task.failed)} failed`);
  if (task.cancelled > 0) parts.push(`${formatCount(task.cancelled)} cancelled`);
  const base = `${formatCount(settledOf(task))} of ${formatCount(task.total)} settled: ${parts.join(', ')}`;
  if (task.status === 'queued') return `queued, ${base}`;
  if (task.dispatchCut) return `${base} (${NOT_ALL_LISTED}: the items after were never listed)`;
  return task.dispatched ? base : `${base} (still dispatching)`;
}

/** A sentence announcing a task's ending: "Task 0193abcd completed: 58 succeeded, 2 failed." */
export function endingText(task: TaskView): string {
  const p = presentStatus(task);
  const counts = [`${formatCount(task.succeeded)} succeeded`];
  if (task.failed > 0) counts.push(`${formatCount(task.failed)} failed`);
  if (task.cancelled > 0) counts.push(`${formatCount(task.cancelled)} cancelled`);
  const why = task.status === 'failed' && p.note ? ` (${p.note})` : '';
  return `Task ${task.id.slice(0, 8)} ${p.label}${why}: ${counts.join(', ')}.`;
}

export const canCancel = (task: TaskView): boolean => task.status === 'queued' || task.status === 'running';

/**
 * What a retry of the failed items brings back, as the server does: the retryable failures of a
 * task that completed or failed, and the items that a stop by its failure tolerance or deadline
 * cancelled before they ran (`notRun`); nothing for a task whose listing was cut short, which the
 * server refuses to retry.
 */
export function retryCount(task: TaskView, counts: ItemCounts | null): { failed: number; notRun: number } {
  if ((task.status !== 'completed' && task.status !== 'failed') || task.dispatchCut || !counts) return { failed: 0, notRun: 0 };
  const stopped = task.stopReason === 'failure_threshold' || task.stopReason === 'deadline';
  return { failed: counts.retryableFailed, notRun: stopped ? counts.cancelled : 0 };
}

/** Retry of the failed items: offered when it would bring any back (`retryCount`). */
export const canRetryFailed = (task: TaskView, counts: ItemCounts | null): boolean => {
  const { failed, notRun } = retryCount(task, counts);
  return failed + notRun > 0;
};

/** Retry of one failed item (even a permanent failure, once its source is fixed) of a finished task. */
export const canRetryItem = (task: TaskView, item: ItemView): boolean => (task.status === 'completed' || task.status === 'failed') && !task.dispatchCut && item.status === 'failed';

export const canArchive = (task: TaskView): boolean => isTerminal(task.status) && task.archivedAt === null;
export const canDelete = (task: TaskView): boolean => isTerminal(task.status);
export const canExport = (task: TaskView): boolean => isTerminal(task.status);

/**
 * The counts of a task whose items retention deleted, from the task's own counters (its items
 * cannot be counted any more; a purged task has ended, so nothing is queued or running).
 */
export const purgedCounts = (task: TaskView): ItemCounts => ({
  queued: 0,
  waitingRetry: 0,
  nextRetryAt: null,
  running: 0,
  succeeded: task.succeeded,
  failed: task.failed,
  retryableFailed: 0,
  cancelled: task.cancelled,
  total: task.total,
});
