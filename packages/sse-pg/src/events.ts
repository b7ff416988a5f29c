import { z } from 'zod';

/** A task's counters as a broadcast carries them. */
export const taskCountsSchema = z.object({
  status: z.enum(['queued', 'running', 'stopping', 'completed', 'failed', 'cancelled']),
  stopReason: z.enum(['cancelled', 'failure_threshold', 'deadline', 'manager_failed']).nullable(),
  total: z.number().int().min(0),
  succeeded: z.number().int().min(0),
  failed: z.number().int().min(0),
  cancelled: z.number().int().min(0),
  round: z.number().int().min(1),
  dispatched: z.boolean(),
});
export type TaskCounts = z.infer<typeof taskCountsSchema>;

// `kind` (the definition's name) lets one stream carry several apps' tasks apart.
const base = { taskId: z.uuid(), tenant: z.string().nullable(), kind: z.string().optional(), at: z.number() };

export const TERMINAL_EVENT_TYPES = ['task.completed', 'task.failed', 'task.cancelled'] as const;

/** Every event that crosses processes. Validated when published and when received. */
export const taskEventSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('task.submitted'), ...base, counts: taskCountsSchema }),
  z.object({ type: z.literal('task.progress'), ...base, counts: taskCountsSchema }),
  z.object({ type: z.literal('task.completed'), ...base, counts: taskCountsSchema }),
  z.object({ type: z.literal('task.failed'), ...base, counts: taskCountsSchema }),
  z.object({ type: z.literal('task.cancelled'), ...base, counts: taskCountsSchema }),
  z.object({
    type: z.literal('item.log'),
    ...base,
    itemId: z.uuid(),
    key: z.string(),
    message: z.string(),
    data: z.record(z.string(), z.unknown()).optional(),
  }),
  z.object({
    type: z.literal('item.failed'),
    ...base,
    itemId: z.uuid(),
    key: z.string(),
    error: z.object({ code: z.string(), message: z.string(), attempt: z.number().int().optional(), retryable: z.boolean().optional() }),
    willRetry: z.boolean(),
  }),
]);
export type TaskEvent = z.infer<typeof taskEventSchema>;
export type TaskStateEvent = Extract<TaskEvent, { counts: TaskCounts }>;

export const isStateEvent = (event: TaskEvent): event is TaskStateEvent => 'counts' in event;
export const isTerminalEvent = (event: TaskEvent): boolean => (TERMINAL_EVENT_TYPES as readonly string[]).includes(event.type);

/**
 * What a NOTIFY carries: the event itself, or a reference to its stored payload. `n` numbers a
 * publisher's notifications: PostgreSQL delivers only one of identical notifications sent in one
 * transaction, and a batch can hold two identical events (a line logged twice in a millisecond).
 */
export const wireSchema = z.union([
  z.object({ v: z.literal(1), n: z.number().int().optional(), event: taskEventSchema }),
  z.object({ v: z.literal(1), n: z.number().int().optional(), ref: z.string().regex(/^\d+$/), taskId: z.uuid() }),
]);
export type Wire = z.infer<typeof wireSchema>;

/** Postgres refuses NOTIFY payloads of 8,000 bytes or more; stay clear of the edge. */
export const MAX_NOTIFY_BYTES = 7900;

const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/;
export function assertChannel(channel: string): string {
  if (!CHANNEL.test(channel)) {
    throw new Error(`channel: "${channel}" must match ${CHANNEL} (a plain Postgres identifier)`);
  }
  return channel;
}
