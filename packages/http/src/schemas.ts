import { z } from 'zod';

export const taskIdParams = z.object({ id: z.uuid({ error: 'must be a task id (a UUID)' }) });
export const itemParams = z.object({ id: z.uuid({ error: 'must be a task id (a UUID)' }), itemId: z.uuid({ error: 'must be an item id (a UUID)' }) });

export const taskStatusSchema = z.enum(['queued', 'running', 'stopping', 'completed', 'failed', 'cancelled']);
export const itemStatusSchema = z.enum(['pending', 'running', 'succeeded', 'failed', 'cancelled']);
const stopReasonSchema = z.enum(['cancelled', 'failure_threshold', 'deadline', 'manager_failed']);
const iso = z.iso.datetime();

export const taskViewSchema = z.object({
  id: z.uuid(),
  kind: z.string(),
  status: taskStatusSchema,
  stopReason: stopReasonSchema.nullable(),
  error: z.string().nullable(),
  /** The input in a few words. */
  summary: z.string().nullable(),
  total: z.number().int(),
  succeeded: z.number().int(),
  failed: z.number().int(),
  cancelled: z.number().int(),
  round: z.number().int(),
  /** When the current round began, and how many items were settled then: a round's rate is its own. */
  roundStartedAt: iso.nullable(),
  roundSettledAtStart: z.number().int(),
  dispatched: z.boolean(),
  /** It stopped before all its items were listed: its counts are of the listed ones, and it cannot be retried. */
  dispatchCut: z.boolean(),
  createdAt: iso,
  startedAt: iso.nullable(),
  completedAt: iso.nullable(),
  deadlineAt: iso.nullable(),
  archivedAt: iso.nullable(),
  /** When retention deleted the task's items and logs (null: they are there). */
  purgedAt: iso.nullable(),
  /** Among its tenant's running tasks, higher is served first. */
  priority: z.number().int(),
});
export type TaskView = z.infer<typeof taskViewSchema>;

const itemErrorSchema = z.object({ code: z.string(), message: z.string(), attempt: z.number().int().optional(), retryable: z.boolean().optional() });

export const itemViewSchema = z.object({
  id: z.uuid(),
  key: z.string(),
  seq: z.number().int(),
  status: itemStatusSchema,
  attempts: z.number().int(),
  round: z.number().int(),
  snapshot: z.unknown(),
  result: z.unknown(),
  error: itemErrorSchema.nullable(),
  startedAt: iso.nullable(),
  finishedAt: iso.nullable(),
  /** From its first start to its end (waits for retries included). */
  durationMs: z.number().int().nullable(),
  /** When a pending item that failed transiently is due again. */
  nextAttemptAt: iso.nullable(),
});
export type ItemView = z.infer<typeof itemViewSchema>;

const LIMIT_RULE = 'must be an integer from 1 to 200';
const limit = z.coerce.number({ error: LIMIT_RULE }).int({ error: LIMIT_RULE }).min(1, { error: LIMIT_RULE }).max(200, { error: LIMIT_RULE }).default(50);
const cursor = z.string().min(1).max(500).optional();

export const taskFilterSchema = z.enum([...taskStatusSchema.options, 'active', 'finished'], { error: 'must be a task status, active or finished' });
export const listTasksQuery = z
  .object({
    limit,
    cursor,
    status: taskFilterSchema.optional(),
    /** A task id, or the start of one. */
    q: z.string().regex(/^[0-9a-fA-F-]{4,36}$/, { error: 'must be a task id or its first 4+ characters (hex digits and dashes)' }).optional(),
    archived: z.enum(['true', 'false'], { error: 'must be true or false' }).optional(),
  })
  .strict();
export const listItemsQuery = z
  .object({ limit, cursor, status: z.enum([...itemStatusSchema.options, 'waiting'], { error: 'must be an item status or waiting' }).optional() })
  .strict();
export const liveQuery = z.object({ task: z.uuid({ error: 'must be a task id (a UUID)' }).optional() }).strict();

/** The largest `maxFailures`: the store counts in 32-bit integers. */
export const MAX_FAILURES_LIMIT = 2_147_483_647;
/** The longest deadline: a year. A task that may run longer has no deadline (null). */
export const MAX_DEADLINE_MS = 365 * 24 * 3600_000;
const MAX_FAILURES_RULE = `must be an integer from 0 to ${MAX_FAILURES_LIMIT}`;
const DEADLINE_RULE = `must be an integer from 1 to ${MAX_DEADLINE_MS} (a year, in ms), or null for none`;
const deadlineMs = z.number({ error: DEADLINE_RULE }).int({ error: DEADLINE_RULE }).min(1, { error: DEADLINE_RULE }).max(MAX_DEADLINE_MS, { error: DEADLINE_RULE }).nullable().optional();

export const submitOptionsSchema = z
  .object({
    maxFailures: z.number({ error: MAX_FAILURES_RULE }).int({ error: MAX_FAILURES_RULE }).min(0, { error: MAX_FAILURES_RULE }).max(MAX_FAILURES_LIMIT, { error: MAX_FAILURES_RULE }).nullable().optional(),
    maxFailureRatio: z.number().min(0).max(1).nullable().optional(),
    deadlineMs,
    /** Among the tenant's running tasks, higher is served first (-100 to 100). */
    priority: z.number({ error: 'must be an integer from -100 to 100' }).int({ error: 'must be an integer from -100 to 100' }).min(-100, { error: 'must be an integer from -100 to 100' }).max(100, { error: 'must be an integer from -100 to 100' }).optional(),
  })
  .strict();

export const retryFailedBody = z
  .object({
    deadlineMs,
    /** Only failures whose cause may pass (transient failures out of attempts, expired, lapsed). */
    retryableOnly: z.boolean().optional(),
  })
  .strict();
export const retryItemBody = z.object({ deadlineMs }).strict();

export const submittedSchema = z.object({ id: z.uuid(), status: taskStatusSchema });
export const taskPageSchema = z.object({ tasks: z.array(taskViewSchema), nextCursor: z.string().nullable() });
export const itemPageSchema = z.object({ items: z.array(itemViewSchema), nextCursor: z.string().nullable() });
export const retriedSchema = z.object({ retried: z.number().int(), task: taskViewSchema });
export const taskSummarySchema = z.object({ counts: z.object({ ...Object.fromEntries(taskStatusSchema.options.map((s) => [s, z.number().int()])), archived: z.number().int() }) });
export const itemCountsSchema = z.object({
  total: z.number().int(),
  queued: z.number().int(),
  waitingRetry: z.number().int(),
  nextRetryAt: iso.nullable(),
  running: z.number().int(),
  succeeded: z.number().int(),
  failed: z.number().int(),
  retryableFailed: z.number().int(),
  cancelled: z.number().int(),
});
export const failuresSchema = z.object({ groups: z.array(z.object({ code: z.string(), count: z.number().int(), retryable: z.number().int(), message: z.string() })) });
export const logsSchema = z.object({ logs: z.array(z.object({ at: iso, attempt: z.number().int(), message: z.string(), data: z.record(z.string(), z.unknown()).optional() })) });
export const principalSchema = z.object({ tenant: z.string(), role: z.enum(['user', 'operator']) });
export const operationsSchema = z.object({
  at: iso,
  queues: z.array(z.object({ name: z.string(), queued: z.number().int(), active: z.number().int(), deferred: z.number().int(), deadLetter: z.number().int() })),
  workers: z.array(
    z.object({ id: z.uuid(), role: z.string(), host: z.string(), pid: z.number().int(), startedAt: iso, lastSeenAt: iso, alive: z.boolean(), concurrency: z.number().int(), inFlight: z.number().int() }),
  ),
  limits: z.array(z.object({ name: z.string(), kind: z.enum(['global', 'rate']), limit: z.number().int(), inUse: z.number().int(), waiting: z.number().int(), waits: z.number().int(), waitedMs: z.number() })),
  series: z.array(z.object({ at: iso, settled: z.number().int(), failed: z.number().int(), p50Ms: z.number().nullable(), p95Ms: z.number().nullable() })),
  recoveries: z.object({
    lapsedRequeued: z.number().int(),
    lapsedFailed: z.number().int(),
    orphansRequeued: z.number().int(),
    countersRepaired: z.number().int(),
    /** Child jobs in the dead-letter queues now. */
    deadLettered: z.number().int(),
  }),
  /** Tasks to look at: running past their deadline, or making no progress (null: not watched). */
  attention: z
    .object({
      active: z.object({ queued: z.number().int(), running: z.number().int(), stopping: z.number().int() }),
      overdue: z.array(z.object({ id: z.uuid(), kind: z.string(), tenant: z.string().nullable(), deadlineAt: iso })),
      stalled: z.array(z.object({ id: z.uuid(), kind: z.string(), tenant: z.string().nullable(), settled: z.number().int(), total: z.number().int(), quietMs: z.number() })),
    })
    .nullable(),
  /** Failed and retried items by error type since the processes listed started. */
  errors: z.array(z.object({ code: z.string(), failed: z.number().int(), retried: z.number().int() })),
  /** Claims live workers lost to another (their lease lapsed while they ran). */
  leasesLost: z.number().int(),
  live: z.object({ sseClients: z.number().int(), notifyFailures: z.number().int() }),
});
export const errorSchema = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    issues: z.array(z.object({ field: z.string(), rule: z.string(), message: z.string() })).optional(),
    /** On a 500: the id of its log line (also in the `X-Request-Id` header). */
    requestId: z.string().optional(),
  }),
});
export const healthSchema = z.object({ ok: z.boolean(), checks: z.record(z.string(), z.string()).optional() });
