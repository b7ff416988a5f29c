/**
 * The names Fanout's spans, attributes and metrics use. Spans and attributes follow the
 * OpenTelemetry conventions where one exists (`error.type`, the messaging spans pg-boss adds);
 * the rest are namespaced `fanout.`. Metric attributes are low-cardinality only: never a task or
 * item id (those are on spans and log lines).
 */
export const INSTRUMENTATION_SCOPE = '@fanout/core';

export const SPAN = {
  /** A task created and its manager job enqueued (the HTTP request's child). */
  submit: 'fanout.submit',
  /** The manager listing a task's items and enqueueing them. */
  dispatch: 'fanout.dispatch',
  /** One page of items inserted with its child jobs. */
  page: 'fanout.dispatch.page',
  /** One attempt of one item, from its claim to its stored outcome; the handler runs inside it. */
  item: 'fanout.item',
  /** The statement that claimed a delivery's items (each item's span links to it). */
  claim: 'fanout.claim',
  /** Waiting for a global or rate limit slot. */
  limitWait: 'fanout.limit.wait',
  /** A transient failure handed back for a later attempt (until the release is stored). */
  retry: 'fanout.retry',
  /** A finished task's failed items given a new round (the round's items continue its trace). */
  retryFailed: 'fanout.retry_failed',
  /** The group-commit statement that stored a batch of outcomes (linked with their item spans). */
  settle: 'fanout.settle',
  /** The fan-in hook of a finished task. */
  fanIn: 'fanout.fan_in',
} as const;

export const ATTR = {
  definition: 'fanout.definition',
  tenant: 'fanout.tenant',
  taskId: 'fanout.task.id',
  taskStatus: 'fanout.task.status',
  stopReason: 'fanout.task.stop_reason',
  round: 'fanout.task.round',
  itemId: 'fanout.item.id',
  itemKey: 'fanout.item.key',
  attempt: 'fanout.item.attempt',
  maxAttempts: 'fanout.item.max_attempts',
  outcome: 'fanout.outcome',
  /** The classifier's code (`http_429`, `network`, an app's code): the class of error, as in the conventions. */
  errorType: 'error.type',
  /** The classifier's decision: `transient` or `permanent`. */
  errorKind: 'fanout.error.kind',
  /** What was done about a failure: `retry`, or `fail` (permanent, out of attempts, too late). */
  decision: 'fanout.retry.decision',
  retryDelayMs: 'fanout.retry.delay_ms',
  /** Why a transient failure was not retried: `out_of_attempts`, `past_deadline`, `delay_too_long`. */
  giveUpReason: 'fanout.retry.give_up_reason',
  limitName: 'fanout.limit.name',
  limitKind: 'fanout.limit.kind',
  waitedMs: 'fanout.limit.waited_ms',
  batchSize: 'fanout.batch.size',
  pageNumber: 'fanout.page.number',
  pageItems: 'fanout.page.items',
  inserted: 'fanout.page.inserted',
  /** Items a retry of failed items gave a new round. */
  retried: 'fanout.task.retried',
  /** Whether the statement took the outcome (false: the claim was lost meanwhile). */
  recorded: 'fanout.settle.recorded',
  /** How long the attempt's handler (`runItem`) ran, on its item span (the handler runs inside that span). */
  handlerMs: 'fanout.handler.duration_ms',
  /** How long an outcome waited in the group commit until it was stored. */
  settleWaitMs: 'fanout.settle.wait_ms',
  claimed: 'fanout.claim.claimed',
  recovery: 'fanout.recovery',
  stream: 'fanout.stream',
} as const;

export const METRIC = {
  tasksSubmitted: 'fanout.tasks.submitted',
  tasksFinished: 'fanout.tasks.finished',
  /** Unfinished tasks by status, read from the database. */
  tasksActive: 'fanout.tasks.active',
  /** Running tasks past their deadline (the maintenance loop should have stopped them). */
  tasksOverdue: 'fanout.tasks.overdue',
  /** Running tasks whose settled count has not moved for the stall threshold. */
  tasksStalled: 'fanout.tasks.stalled',
  itemsSettled: 'fanout.items.settled',
  itemsRetried: 'fanout.items.retried',
  itemDuration: 'fanout.item.duration',
  itemQueueWait: 'fanout.item.queue_wait',
  itemsInFlight: 'fanout.items.in_flight',
  leasesLost: 'fanout.leases.lost',
  recoveries: 'fanout.maintenance.recoveries',
  limitSlotsInUse: 'fanout.limit.slots.in_use',
  limitSlots: 'fanout.limit.slots.limit',
  limitWaiting: 'fanout.limit.waiting',
  limitWaitDuration: 'fanout.limit.wait.duration',
  sseClients: 'fanout.sse.clients',
  notifyFailures: 'fanout.notify.failures',
} as const;

/** Histogram bounds (seconds) for item durations and waits: 5 ms to 10 min. */
export const DURATION_BUCKETS_S: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
