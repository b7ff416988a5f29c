import type { FanoutEvents, TaskEvent as RuntimeTaskEvent } from '@fanout/core';
import type { TaskEventPublisher } from './publisher.ts';

const counts = (e: RuntimeTaskEvent) => ({
  status: e.status,
  stopReason: e.stopReason,
  total: e.total,
  succeeded: e.succeeded,
  failed: e.failed,
  cancelled: e.cancelled,
  round: e.round,
  dispatched: e.dispatched,
});

/**
 * Broadcasts a runtime's task events (submits, progress, endings, item logs and failures) through
 * the publisher; endings are delivered (awaited), so one whose notification failed is announced
 * again by the maintenance loop. Run it in every process that works or controls tasks. Returns a
 * function that detaches it.
 */
export function broadcastRuntimeEvents(events: FanoutEvents, publisher: TaskEventPublisher): () => void {
  const offs = [
    ...(['task.submitted', 'task.progress'] as const).map((type) =>
      events.on(type, (e) => publisher.publish({ type, taskId: e.id, tenant: e.tenant, kind: e.kind, at: e.at, counts: counts(e) })),
    ),
    // Endings are delivered, not just published: the runtime records a task's ending as announced
    // only once its notification is sent, and announces it again otherwise.
    events.onEnding((type, e) => publisher.deliver({ type, taskId: e.id, tenant: e.tenant, kind: e.kind, at: e.at, counts: counts(e) })),
    events.on('item.log', (e) =>
      publisher.publish({
        type: 'item.log',
        taskId: e.taskId,
        tenant: e.tenant,
        kind: e.kind,
        at: Date.now(),
        itemId: e.itemId,
        key: e.key,
        message: e.message,
        ...(e.data ? { data: e.data } : {}),
      }),
    ),
    events.on('item.failed', (e) =>
      publisher.publish({
        type: 'item.failed',
        taskId: e.taskId,
        tenant: e.tenant,
        kind: e.kind,
        at: Date.now(),
        itemId: e.itemId,
        key: e.key,
        error: e.error,
        willRetry: e.willRetry,
      }),
    ),
  ];
  return () => {
    for (const off of offs) off();
  };
}
