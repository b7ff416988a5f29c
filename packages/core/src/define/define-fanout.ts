import type { z } from 'zod';
import { FanoutError } from '../errors/errors.ts';
import type { ErrorClassifier } from '../errors/classify.ts';
import type { GlobalLimit, GlobalLimitOptions, RateLimit, RateLimitOptions } from '../limits/global-limit.ts';
import type { Logger } from '../runtime/logger.ts';
import type { TaskRecord } from '../store/types.ts';
import { assertQueueName } from './names.ts';

/** One child as the manager lists it: a business key unique in the task, and its snapshot. */
export interface ListedItem<TItem> {
  key: string;
  snapshot: TItem;
}

/**
 * What `listItems` returns: items one at a time or in pages, synchronously or not. The manager
 * consumes it lazily, a page at a time, so 100,000 items never sit in memory together.
 */
export type ListedItems<TItem> =
  | AsyncIterable<ListedItem<TItem> | readonly ListedItem<TItem>[]>
  | Iterable<ListedItem<TItem> | readonly ListedItem<TItem>[]>;

export interface ManagerContext {
  task: { id: string; tenant: string | null };
  /** Aborted when the task is stopped or the runtime shuts down. */
  signal: AbortSignal;
  logger: Logger;
}

export interface ItemContext {
  /**
   * Aborted when the task is cancelled or fails early (on every process), when this worker
   * loses its claim, when the job expires, or when the runtime shuts down.
   */
  signal: AbortSignal;
  item: { id: string; key: string; taskId: string; attempt: number; maxAttempts: number; round: number };
  task: { id: string; tenant: string | null };
  /** A line for the task's live log (`item.log` event). */
  log(message: string, data?: Record<string, unknown>): void;
  /** Progress inside this item (`item.progress` event). */
  progress(detail: { fraction?: number; message?: string }): void;
  /** The runtime's limits shared by every process, for an expensive call inside the handler. */
  limits: LimitsAccess;
  logger: Logger;
}

export interface LimitsAccess {
  /** A strict concurrency limit across all processes, e.g. `global('llm', { limit: 5 })`. */
  global(name: string, options: GlobalLimitOptions): GlobalLimit;
  /** A strict rate limit across all processes, e.g. `rate('llm_rpm', { limit: 60, intervalMs: 60_000 })`. */
  rate(name: string, options: RateLimitOptions): RateLimit;
}

export interface FanInContext {
  logger: Logger;
  signal: AbortSignal;
}

export interface ManagerQueueOptions {
  /** @default 2 */
  retryLimit?: number;
  /** Delay before a retry of a failed manager, doubled per attempt. @default 5 */
  retryDelaySeconds?: number;
  /** @default 3600 (60 minutes) */
  expireInSeconds?: number;
  /** @default 30 */
  heartbeatSeconds?: number;
  /** Items inserted (and jobs enqueued) per transaction; the first pages are smaller (100, 200, ...). @default 1000 */
  pageSize?: number;
  /** Pages inserted side by side while the listing goes on. @default 2 */
  pagesInFlight?: number;
  /**
   * Tasks of at most this many items are dispatched by `submit()` itself: it lists the items and
   * stores the task with them and their jobs in one transaction, so the first children start
   * within milliseconds instead of after a manager job's turn. The listing then runs in the
   * submitting process (an API process), before the task is stored (`ctx.task.id` is the id it
   * will have): give this only to definitions whose `listItems` is cheap and reads nothing of the
   * task's own rows. A listing with more items, or one that throws, is stopped and left to the
   * manager job, which lists the task again from the start.
   * At most `pageSize`; 0 turns it off. @default 0
   */
  dispatchAtSubmit?: number;
}

export interface ChildQueueOptions {
  /**
   * Retries after the first attempt, so an item runs at most `retryLimit + 1` times; the failure
   * of the last one counts as failed. @default 3
   */
  retryLimit?: number;
  /** Base delay before a retry, doubled per attempt with jitter when `retryBackoff`. @default 10 */
  retryDelaySeconds?: number;
  /** @default true */
  retryBackoff?: boolean;
  /** @default 600 */
  retryDelayMaxSeconds?: number;
  /**
   * An attempt still running this long after its handler started is aborted (its `signal`) and
   * counts as a failed attempt, also when its handler ignores the signal (it is then no longer
   * waited for, 3 s later). An item claimed ahead that waits for a free handler while none came
   * free for longer than that (behind handlers that ignore their signals) expires the same way,
   * without running.
   * @default 1800 (30 minutes)
   */
  expireInSeconds?: number;
  /** @default 30 */
  heartbeatSeconds?: number;
}

/** What `checkInput` and `summarize` are told of the submit. */
export interface CheckInputContext {
  /** The tenant the task would belong to (`submit`'s `tenant` option). */
  tenant: string | null;
}

/** A problem `checkInput` found with the input. */
export interface InputIssue {
  /** A dotted path in the input: `ruleSetId`, `documentIds.3`. */
  field: string;
  /** The rule broken: `not_found`, `mismatch`. */
  rule: string;
  /** What is wrong, for the user: "not a rule set of this study". */
  message: string;
}

export interface FanoutOptions {
  manager?: ManagerQueueOptions;
  child?: ChildQueueOptions;
  /** Fail the task early once more than this many items failed. */
  maxFailures?: number | null;
  /** Fail the task early once more than this share (0..1) of its items failed. */
  maxFailureRatio?: number | null;
  /** Fail the task (cancelling what is left) when it runs longer than this. */
  deadlineMs?: number | null;
}

/** A finished task, as the fan-in hook receives it. */
export type FinishedTask = TaskRecord;

export interface FanoutDefinitionInput<TInputSchema extends z.ZodType, TItemSchema extends z.ZodType, TResult> {
  /** `[a-z0-9_]`; the queues are `<name>_manager` and `<name>_items`. */
  name: string;
  /** The task input; `submit()` validates against it. */
  input: TInputSchema;
  /** One item's snapshot: what the manager freezes for a child, checked before it is stored. */
  item: TItemSchema;
  /** Checked on what `runItem` returns, when given. */
  result?: z.ZodType<TResult>;
  /** The manager side: list the task's items with their snapshots. */
  listItems(
    input: z.output<TInputSchema>,
    ctx: ManagerContext,
  ): ListedItems<z.input<TItemSchema>> | Promise<ListedItems<z.input<TItemSchema>>>;
  /** The child side: process one item. Throw to fail (see the classifier); return the result. */
  runItem(item: z.output<TItemSchema>, ctx: ItemContext): Promise<TResult> | TResult;
  /**
   * The input in a few words for lists and dashboards ("12 papers"), stored with the task at
   * submit. Keep it short (it is cut at 200 characters) and free of anything secret. It may read
   * what the input names ("CDISCPILOT01 · pilot rules v2"): it is told the tenant, and may resolve
   * later; one that throws leaves the task without a summary (logged), the submit goes on.
   */
  summarize?(input: z.output<TInputSchema>, ctx: CheckInputContext): string | Promise<string>;
  /**
   * Checks a submit's input against what is stored, before anything is: that the study it names is
   * the tenant's, that the rule set belongs to that study. Return the problems found, each naming a
   * field of the input (`ruleSetId`, `documentIds.3`); with any, `submit()` stores nothing and throws
   * a `FanoutError` `invalid_argument` naming the first (`field: 'input.ruleSetId'`) and carrying
   * them all in `issues` (the HTTP API answers 400 with each as `body.input.ruleSetId`). A replay
   * of an idempotency key already used is not checked: it answers its task (or a conflict), as
   * without the hook. What is stored can change between the submit and the listing, so
   * `listItems` still has to refuse what it cannot use.
   */
  checkInput?(input: z.output<TInputSchema>, ctx: CheckInputContext): Promise<readonly InputIssue[] | void> | readonly InputIssue[] | void;
  /**
   * The fan-in hook: runs once when the task ends (once per round after a retry-failed). One that
   * throws is run again by a later maintenance pass, unless it throws a `PermanentError` (what it
   * needs is gone): the round is then done, the error logged and reported, and it is not run again.
   */
  onFinish?(task: FinishedTask, ctx: FanInContext): Promise<void> | void;
  /**
   * The purge hook: deletes what the app keeps of tasks whose details are being deleted, by
   * retention (`maintenance.retentionMs`) or by `deleteTask`: its own rows keyed by their task or
   * item ids, files. Called once their items and logs are gone (retention) or before the task row
   * goes (`deleteTask`, which fails when the hook does, leaving the task marked purged), with up to
   * 100 task ids of this definition at a time. Retention keeps a task marked as under way until
   * its hook succeeded, and calls it again after a failure or a crash (backing off the
   * definition's purges meanwhile), so the hook must be idempotent; delete in bounded batches
   * (a 100,000-item task's rows are not one statement's work).
   */
  onPurge?(taskIds: readonly string[], ctx: FanInContext): Promise<void> | void;
  classify?: ErrorClassifier;
  options?: FanoutOptions;
}

export interface ResolvedOptions {
  manager: Required<ManagerQueueOptions>;
  child: Required<ChildQueueOptions>;
  maxFailures: number | null;
  maxFailureRatio: number | null;
  deadlineMs: number | null;
}

export interface FanoutDefinition<TInputSchema extends z.ZodType = z.ZodType, TItemSchema extends z.ZodType = z.ZodType, TResult = unknown>
  extends FanoutDefinitionInput<TInputSchema, TItemSchema, TResult> {
  readonly managerQueue: string;
  readonly childQueue: string;
  readonly deadLetterQueue: string;
  readonly resolved: ResolvedOptions;
}

/** A definition of any schemas, as runtimes and lists hold them. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyFanoutDefinition = FanoutDefinition<any, any, any>;

/** The largest count a counter column holds. */
export const INT32_MAX = 2 ** 31 - 1;
/** The longest deadline a task may have: a year. */
export const MAX_DEADLINE_MS = 365 * 24 * 3600_000;

function positiveInt(value: number, field: string, min = 1, max = INT32_MAX): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new FanoutError('invalid_argument', `${field}: must be an integer from ${min} to ${max}, got ${value}`, { field });
  }
  return value;
}

export function resolveLimits(
  options: { maxFailures?: number | null | undefined; maxFailureRatio?: number | null | undefined; deadlineMs?: number | null | undefined },
  prefix: string,
): { maxFailures: number | null; maxFailureRatio: number | null; deadlineMs: number | null } {
  const maxFailures = options.maxFailures ?? null;
  if (maxFailures !== null) positiveInt(maxFailures, `${prefix}maxFailures`, 0, INT32_MAX);
  const maxFailureRatio = options.maxFailureRatio ?? null;
  if (maxFailureRatio !== null && !(maxFailureRatio >= 0 && maxFailureRatio <= 1)) {
    throw new FanoutError('invalid_argument', `${prefix}maxFailureRatio: must be between 0 and 1, got ${maxFailureRatio}`, {
      field: `${prefix}maxFailureRatio`,
    });
  }
  const deadlineMs = options.deadlineMs ?? null;
  if (deadlineMs !== null) positiveInt(deadlineMs, `${prefix}deadlineMs`, 1, MAX_DEADLINE_MS);
  return { maxFailures, maxFailureRatio, deadlineMs };
}

/**
 * Defines a fan-out task type. The definition is plain data plus handlers: register it with a
 * runtime (`createFanout`) in every process that submits or works its tasks.
 */
export function defineFanout<TInputSchema extends z.ZodType, TItemSchema extends z.ZodType, TResult = unknown>(
  definition: FanoutDefinitionInput<TInputSchema, TItemSchema, TResult>,
): FanoutDefinition<TInputSchema, TItemSchema, TResult> {
  assertQueueName(definition.name, 'name');
  const m = definition.options?.manager ?? {};
  const c = definition.options?.child ?? {};
  const resolved: ResolvedOptions = {
    manager: {
      retryLimit: positiveInt(m.retryLimit ?? 2, 'options.manager.retryLimit', 0),
      retryDelaySeconds: positiveInt(m.retryDelaySeconds ?? 5, 'options.manager.retryDelaySeconds', 0),
      expireInSeconds: positiveInt(m.expireInSeconds ?? 3600, 'options.manager.expireInSeconds'),
      heartbeatSeconds: positiveInt(m.heartbeatSeconds ?? 30, 'options.manager.heartbeatSeconds', 10),
      pageSize: positiveInt(m.pageSize ?? 1000, 'options.manager.pageSize'),
      pagesInFlight: positiveInt(m.pagesInFlight ?? 2, 'options.manager.pagesInFlight'),
      dispatchAtSubmit: 0,
    },
    child: {
      retryLimit: positiveInt(c.retryLimit ?? 3, 'options.child.retryLimit', 0),
      retryDelaySeconds: positiveInt(c.retryDelaySeconds ?? 10, 'options.child.retryDelaySeconds', 0),
      retryBackoff: c.retryBackoff ?? true,
      retryDelayMaxSeconds: positiveInt(c.retryDelayMaxSeconds ?? 600, 'options.child.retryDelayMaxSeconds', 0),
      expireInSeconds: positiveInt(c.expireInSeconds ?? 1800, 'options.child.expireInSeconds'),
      heartbeatSeconds: positiveInt(c.heartbeatSeconds ?? 30, 'options.child.heartbeatSeconds', 10),
    },
    ...resolveLimits(definition.options ?? {}, 'options.'),
  };
  resolved.manager.dispatchAtSubmit = positiveInt(m.dispatchAtSubmit ?? 0, 'options.manager.dispatchAtSubmit', 0, resolved.manager.pageSize);
  return {
    ...definition,
    managerQueue: `${definition.name}_manager`,
    // The scheduler's jobs (before the scheduler, `<name>_child` held one job per item).
    childQueue: `${definition.name}_items`,
    deadLetterQueue: `${definition.name}_child_dead`,
    resolved,
  };
}
