import type { EventCounts, TaskStateEvent, TaskStatus, TaskView } from '../api/types.ts';

export const TERMINAL: readonly TaskStatus[] = ['completed', 'failed', 'cancelled'];
export const isTerminal = (status: TaskStatus): boolean => TERMINAL.includes(status);

/** Items settled so far: succeeded + failed + cancelled. */
export const settledOf = (c: { succeeded: number; failed: number; cancelled: number }): number => c.succeeded + c.failed + c.cancelled;

// Among states of equal round and settled count, a later status beats an earlier one.
const STATUS_RANK: Record<TaskStatus, number> = { queued: 0, running: 1, stopping: 2, completed: 3, failed: 3, cancelled: 3 };

/**
 * Orders two states of one task: > 0 when `a` is newer than `b`, < 0 when older, 0 when neither
 * is. States only move forward, by round, then settled items, then status (a terminal status
 * wins), then dispatch (dispatched, then more items dispatched).
 */
export function compareStates(a: EventCounts, b: EventCounts): number {
  return (
    a.round - b.round ||
    settledOf(a) - settledOf(b) ||
    STATUS_RANK[a.status] - STATUS_RANK[b.status] ||
    Number(a.dispatched) - Number(b.dispatched) ||
    a.total - b.total
  );
}

export function countsOf(task: TaskView): EventCounts {
  const { status, stopReason, total, succeeded, failed, cancelled, round, dispatched } = task;
  return { status, stopReason, total, succeeded, failed, cancelled, round, dispatched };
}

// The fields that move with the task's state; the others (summary, archivedAt, ...) are taken
// from whichever view is the latest answer of the server.
const STATE_FIELDS = ['status', 'stopReason', 'error', 'total', 'succeeded', 'failed', 'cancelled', 'round', 'roundStartedAt', 'roundSettledAtStart', 'dispatched', 'startedAt', 'completedAt'] as const;

/**
 * Merges a view the server just answered into the one we hold: the newer state wins (a list
 * answer that left the server before the latest event must not move the task back), and the
 * other fields come from the answer.
 */
export function mergeTaskView(held: TaskView | undefined, incoming: TaskView): TaskView {
  if (!held || compareStates(countsOf(incoming), countsOf(held)) >= 0) return incoming;
  const merged: TaskView = { ...incoming };
  for (const key of STATE_FIELDS) (merged as unknown as Record<string, unknown>)[key] = held[key];
  return merged;
}

/**
 * Applies an event's counters to a held view; returns the same object when the event is not
 * newer. Fields the event does not carry are estimated from its time until the server is asked
 * again: the start of a new round, the start, the end.
 */
export function applyEventCounts(held: TaskView, counts: EventCounts, at: number): TaskView {
  if (compareStates(counts, countsOf(held)) <= 0) return held;
  const when = new Date(at).toISOString();
  const next: TaskView = { ...held, ...counts };
  if (counts.round > held.round) {
    next.roundStartedAt = when;
    next.roundSettledAtStart = settledOf(counts);
    next.completedAt = null;
    next.error = null;
  }
  if (counts.status !== 'queued' && !next.startedAt) next.startedAt = when;
  if (isTerminal(counts.status) && !next.completedAt) next.completedAt = when;
  if (counts.status !== 'queued' && !next.roundStartedAt) next.roundStartedAt = next.startedAt;
  return next;
}

/** A view for a task first known from its `task.submitted` event, until the server is asked. */
export function viewFromEvent(event: TaskStateEvent): TaskView {
  const when = new Date(event.at).toISOString();
  return applyEventCounts(
    {
      id: event.taskId,
      kind: event.kind,
      status: 'queued',
      stopReason: null,
      error: null,
      summary: null,
      total: 0,
      succeeded: 0,
      failed: 0,
      cancelled: 0,
      round: 1,
      roundStartedAt: null,
      roundSettledAtStart: 0,
      dispatched: false,
      createdAt: when,
      startedAt: null,
      completedAt: null,
      deadlineAt: null,
      archivedAt: null,
      purgedAt: null,
      priority: 0,
    },
    { ...event.counts },
    event.at,
  );
}
