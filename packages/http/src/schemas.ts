import { z } from 'zod';

export const taskIdParams = z.object({ id: z.uuid({ error: 'must be a task id (a UUID)' }) });

export const taskStatusSchema = z.enum(['queued', 'running', 'stopping', 'completed', 'failed', 'cancelled']);
export const itemStatusSchema = z.enum(['pending', 'running', 'succeeded', 'failed', 'cancelled']);

export const taskViewSchema = z.object({
  id: z.uuid(),
  kind: z.string(),
  status: taskStatusSchema,
  stopReason: z.enum(['cancelled', 'failure_threshold', 'deadline', 'manager_failed']).nullable(),
  error: z.string().nullable(),
  total: z.number().int(),
  succeeded: z.number().int(),
  failed: z.number().int(),
  cancelled: z.number().int(),
  round: z.number().int(),
  dispatched: z.boolean(),
  createdAt: z.iso.datetime(),
  startedAt: z.iso.datetime().nullable(),
  completedAt: z.iso.datetime().nullable(),
});
export type TaskView = z.infer<typeof taskViewSchema>;

export const itemViewSchema = z.object({
  id: z.uuid(),
  key: z.string(),
  seq: z.number().int(),
  status: itemStatusSchema,
  attempts: z.number().int(),
  round: z.number().int(),
  snapshot: z.unknown(),
  result: z.unknown(),
  error: z.object({ code: z.string(), message: z.string(), attempt: z.number().int().optional() }).nullable(),
  startedAt: z.iso.datetime().nullable(),
  finishedAt: z.iso.datetime().nullable(),
});

const LIMIT_RULE = 'must be an integer from 1 to 200';
const limit = z.coerce.number({ error: LIMIT_RULE }).int({ error: LIMIT_RULE }).min(1, { error: LIMIT_RULE }).max(200, { error: LIMIT_RULE }).default(50);
const cursor = z.string().min(1).max(500).optional();

export const listTasksQuery = z.object({ limit, cursor, status: taskStatusSchema.optional() }).strict();
export const listItemsQuery = z.object({ limit, cursor, status: itemStatusSchema.optional() }).strict();

export const submitOptionsSchema = z
  .object({
    maxFailures: z.number().int().min(0).nullable().optional(),
    maxFailureRatio: z.number().min(0).max(1).nullable().optional(),
    deadlineMs: z.number().int().min(1).nullable().optional(),
  })
  .strict();

export const retryFailedBody = z.object({ deadlineMs: z.number().int().min(1).nullable().optional() }).strict();

export const submittedSchema = z.object({ id: z.uuid(), status: taskStatusSchema });
export const taskPageSchema = z.object({ tasks: z.array(taskViewSchema), nextCursor: z.string().nullable() });
export const itemPageSchema = z.object({ items: z.array(itemViewSchema), nextCursor: z.string().nullable() });
export const retriedSchema = z.object({ retried: z.number().int(), task: taskViewSchema });
export const errorSchema = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    issues: z.array(z.object({ field: z.string(), rule: z.string(), message: z.string() })).optional(),
  }),
});
export const healthSchema = z.object({ ok: z.boolean(), checks: z.record(z.string(), z.string()).optional() });
