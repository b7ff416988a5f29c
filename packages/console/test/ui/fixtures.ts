import type { EventCounts, TaskStateEvent, TaskView } from '../../src/ui/api/types.ts';

export function task(over: Partial<TaskView> = {}): TaskView {
  return {
    id: '0193abcd-0000-7000-8000-000000000001',
    kind: 'asl-extract',
    status: 'running',
    stopReason: null,
    error: null,
    summary: '60 papers',
    total: 60,
    succeeded: 0,
    failed: 0,
    cancelled: 0,
    round: 1,
    roundStartedAt: '2026-11-30T14:00:00.000Z',
    roundSettledAtStart: 0,
    dispatched: true,
    createdAt: '2026-11-30T13:59:58.000Z',
    startedAt: '2026-11-30T14:00:00.000Z',
    completedAt: null,
    deadlineAt: null,
    archivedAt: null,
    purgedAt: null,
    priority: 0,
    ...over,
  };
}

export function counts(over: Partial<EventCounts> = {}): EventCounts {
  return { status: 'running', stopReason: null, total: 60, succeeded: 0, failed: 0, cancelled: 0, round: 1, dispatched: true, ...over };
}

export function event(type: TaskStateEvent['type'], over: Partial<EventCounts> = {}, at = Date.parse('2026-11-30T14:01:00Z'), taskId = task().id): TaskStateEvent {
  return { type, taskId, tenant: 'team-a', kind: 'asl-extract', at, counts: counts(over) };
}
