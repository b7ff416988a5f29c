import type { ItemRecord, TaskRecord } from '@fanout/core';
import type { ItemView, TaskView } from './schemas.ts';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** A task as the API shows it (the input itself stays out: it can be large; `summary` says it). */
export function taskView(task: TaskRecord): TaskView {
  return {
    id: task.id,
    kind: task.kind,
    status: task.status,
    stopReason: task.stopReason,
    error: task.error,
    summary: task.summary,
    total: task.total,
    succeeded: task.succeeded,
    failed: task.failed,
    cancelled: task.cancelled,
    round: task.round,
    roundStartedAt: iso(task.roundStartedAt ?? task.startedAt),
    roundSettledAtStart: task.roundSettledAtStart,
    dispatched: task.dispatchedAt !== null,
    dispatchCut: task.dispatchCut ?? false,
    createdAt: task.createdAt.toISOString(),
    startedAt: iso(task.startedAt),
    completedAt: iso(task.completedAt),
    deadlineAt: iso(task.deadlineAt),
    archivedAt: iso(task.archivedAt),
    purgedAt: iso(task.purgedAt),
    priority: task.priority,
  };
}

export function itemView(item: ItemRecord): ItemView {
  return {
    id: item.id,
    key: item.key,
    seq: item.seq,
    status: item.status,
    attempts: item.attempts,
    round: item.round,
    snapshot: item.snapshot,
    result: item.result,
    error: item.error,
    startedAt: iso(item.startedAt),
    finishedAt: iso(item.finishedAt),
    durationMs: item.startedAt && item.finishedAt ? Math.max(0, item.finishedAt.getTime() - item.startedAt.getTime()) : null,
    nextAttemptAt: item.status === 'pending' && item.attempts > 0 ? iso(item.retryAt) : null,
  };
}
