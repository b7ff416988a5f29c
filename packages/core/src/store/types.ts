/**
 * The store contract: everything Fanout keeps in the database besides pg-boss's own jobs.
 *
 * Item rows are the truth. Every method that moves an item also moves its task's counters in
 * the same transaction, with arithmetic done by the database (never read-then-write), and every
 * claim is a conditional update. A store passes `runStoreConformance` from `@fanout/core/testing`.
 */

export type TaskStatus = 'queued' | 'running' | 'stopping' | 'completed' | 'failed' | 'cancelled';
export type StopReason = 'cancelled' | 'failure_threshold' | 'deadline' | 'manager_failed';
export type ItemStatus = 'pending' | 'running' | 'succeeded' | 'failed' | 'cancelled';

export const TERMINAL_TASK_STATUSES: readonly TaskStatus[] = ['completed', 'failed', 'cancelled'];
export const isTerminalTaskStatus = (status: TaskStatus): boolean => TERMINAL_TASK_STATUSES.includes(status);

/** The reason recorded on a failed (or retried) item. */
export interface ItemError {
  code: string;
  message: string;
  /** The attempt that produced it (1-based). */
  attempt?: number;
  /**
   * On a final failure: whether running it again may succeed (transient failures that ran out of
   * attempts, expired jobs, lapsed claims), or not without a change to its input (a permanent
   * error). Unset on failures recorded before this existed.
   */
  retryable?: boolean;
}

export interface TaskRecord {
  id: string;
  kind: string;
  tenant: string | null;
  input: unknown;
  status: TaskStatus;
  stopReason: StopReason | null;
  error: string | null;
  /** Items dispatched so far; final once `dispatchedAt` is set. */
  total: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  round: number;
  maxAttempts: number;
  maxFailures: number | null;
  maxFailureRatio: number | null;
  deadlineAt: Date | null;
  dispatchedAt: Date | null;
  /**
   * Its dispatch ended before the listing did (a stop, a failed manager): items after the cut were
   * never listed, so its counts are of the listed ones, and a retry is refused. Optional for a store
   * that does not say it (read as false).
   */
  dispatchCut?: boolean;
  createdAt: Date;
  startedAt: Date | null;
  completedAt: Date | null;
  updatedAt: Date;
  /** The input in a few words ("12 papers"), from the definition's `summarize`. */
  summary: string | null;
  archivedAt: Date | null;
  /** When the current round began (dispatch start, or the retry that opened it). */
  roundStartedAt: Date | null;
  /** Items settled when the current round began: the round's own progress is what is above it. */
  roundSettledAtStart: number;
  /** Among the running tasks of its tenant, a higher priority is served first; equal ones take turns. */
  priority: number;
  /** When retention deleted the task's items and logs (its counters stay); null while they are kept. */
  purgedAt: Date | null;
}

/** A task as a submit returns it: `replayed` when an earlier submit with the same key made it. */
export interface SubmittedTask extends TaskRecord {
  replayed: boolean;
}

/** The counters of a task as a statement left them. */
export interface TaskCounts {
  id: string;
  kind: string;
  tenant: string | null;
  status: TaskStatus;
  stopReason: StopReason | null;
  total: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  round: number;
  dispatched: boolean;
}

/** The counters of a task record (or of a settle's result, which has them already). */
export function taskCountsOf(task: TaskRecord | TaskCounts): TaskCounts {
  return {
    id: task.id,
    kind: task.kind,
    tenant: task.tenant,
    status: task.status,
    stopReason: task.stopReason,
    total: task.total,
    succeeded: task.succeeded,
    failed: task.failed,
    cancelled: task.cancelled,
    round: task.round,
    dispatched: 'dispatched' in task ? task.dispatched : task.dispatchedAt !== null,
  };
}

export interface ItemRecord {
  id: string;
  taskId: string;
  seq: number;
  key: string;
  snapshot: unknown;
  status: ItemStatus;
  attempts: number;
  result: unknown;
  error: ItemError | null;
  round: number;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** When a pending item that failed transiently is due again. */
  retryAt: Date | null;
}

/**
 * Runs SQL inside the store's open transaction. pg-boss accepts it as its `db` option, which is
 * how jobs are enqueued in the same transaction as the rows they point at.
 */
export interface SqlExecutor {
  executeSql(text: string, values?: unknown[]): Promise<{ rows: any[] }>;
}

/**
 * A task that has items to run: now (they were inserted, released, requeued or retried), or
 * after `delayMs` (a retry's backoff). The runtime makes sure its tenant has jobs to take them.
 */
export interface WorkToEnqueue {
  taskId: string;
  kind: string;
  tenant: string | null;
  delayMs?: number;
  /**
   * When the delayed items are due (ms since the epoch) by the database's clock, which stamped
   * them: their job is due then too, whatever this process's clock says. Optional.
   */
  dueAt?: number;
}

/** Called inside the store's transaction when tasks have items to run (see `WorkToEnqueue`). */
export type EnqueueWork = (tx: SqlExecutor, work: readonly WorkToEnqueue[]) => Promise<void>;
/** Called inside the store's transaction to enqueue the manager job of a new task. */
export type EnqueueTask = (tx: SqlExecutor, task: TaskRecord) => Promise<void>;

export interface NewTask {
  /** The task's id, when the caller made it first (a UUID v7, `uuidv7()`); else the store makes one. */
  id?: string;
  kind: string;
  tenant?: string | null;
  input: unknown;
  maxAttempts: number;
  maxFailures?: number | null;
  maxFailureRatio?: number | null;
  deadlineAt?: Date | null;
  summary?: string | null;
  /**
   * A client's key for this submit: a second submit with the same key (same kind and tenant)
   * returns the first task instead of creating one; with a different `requestHash`, it is a
   * `conflict`.
   */
  idempotencyKey?: string | null;
  requestHash?: string | null;
  /** Among the running tasks of its tenant, a higher priority is served first. @default 0 */
  priority?: number;
}

export interface NewItem {
  key: string;
  /**
   * The item's position in the manager's listing (1-based). A re-dispatch lists the same items
   * at the same positions; only their order on screen depends on it.
   */
  seq: number;
  snapshot: unknown;
  /** An item that failed validation at dispatch is stored already failed, and counted. */
  error?: ItemError;
}

export interface InsertItemsResult {
  /** Items newly inserted (a key seen before in this task is skipped). */
  inserted: number;
  /** The task's status after the insert; the manager stops dispatching unless `running`. */
  status: TaskStatus;
}

export interface ClaimRequest {
  itemId: string;
}

export interface ClaimedItem {
  itemId: string;
  taskId: string;
  kind: string;
  tenant: string | null;
  key: string;
  snapshot: unknown;
  /** This attempt's number, 1-based. */
  attempt: number;
  maxAttempts: number;
  round: number;
  /** The task's deadline, when it has one (a retry later than it is pointless). */
  deadlineAt: Date | null;
  /** The trace context its task's dispatch ran in (when a tracer was registered then). */
  trace?: Record<string, string> | null;
  /** When it became due (ms since epoch): its retry delay's end, or its task's dispatch; null when unknown. */
  dueAt?: number | null;
}

/** One batch of retention: the task it worked on (null: none was due), rows deleted, whether it is done. */
export interface PurgeResult {
  /** The first task the batch worked on (null: nothing to purge). */
  taskId: string | null;
  /** Rows deleted (items and log lines). */
  deleted: number;
  /** Every task the batch worked on has nothing left. */
  purged: boolean;
  /** The tasks the batch worked on (small tasks share a batch). */
  tasks?: string[];
  /** The definition of each of `tasks`, in the same order. */
  kinds?: string[];
}

/** A process's hold on the end of a purge (its app's purge hook runs under it): an owner token and a length. */
export interface PurgeLease {
  token: string;
  ms: number;
}

/** What a job of the scheduler asks for: the next items of a tenant's running tasks, in turn. */
export interface ClaimNextQuery {
  kind: string;
  /** The tenant whose tasks are served (null and '' are the same tenant). */
  tenant: string | null;
  /** The task this job's chain served last: the next one after it (by id) is served, in turn. */
  after: string | null;
  /** At most this many items. */
  limit: number;
  token: string;
  leaseMs: number;
  /** Items of this kind and tenant running at once, at most (null: no quota). */
  maxInFlight?: number | null;
  /** Only the first this many running tasks of the tenant (by priority, then age) are served. */
  maxRunningTasks?: number | null;
}

export interface ClaimNextResult {
  claimed: ClaimedItem[];
  /**
   * The task served last: the items come from it and, when it had fewer than the limit, from the
   * tasks before it in turn (up to a few). When nothing was claimed, the first task whose turn it
   * was (its items all taken by concurrent claims), or null when the tenant has nothing to run.
   */
  taskId: string | null;
  /** Nothing was claimed because the tenant is at its `maxInFlight` quota (there is work waiting). */
  atQuota: boolean;
}

export interface ClaimResult {
  claimed: ClaimedItem[];
  /**
   * Items that could not be claimed: already settled, held under a live lease by another
   * worker, out of attempts, or belonging to a task that is not running. Their job has nothing
   * left to do.
   */
  skipped: string[];
}

export interface Outcome {
  itemId: string;
  /** The claim token the item was claimed with; a settle under a lost claim is ignored. */
  token: string;
  status: 'succeeded' | 'failed' | 'cancelled';
  result?: unknown;
  error?: ItemError;
}

/** What `createDispatchedTask` did: the task, the items it inserted, and the task as its dispatch ended. */
export interface DispatchedTask {
  task: SubmittedTask;
  inserted: number;
  settled: SettledTask | null;
}

export interface SettledTask extends TaskCounts {
  /** This statement moved the task to a terminal status: it is the one that announces it. */
  finished: boolean;
  /** Failures passed the task's tolerance; the caller stops the task. */
  overFailureLimit: boolean;
}

export interface SettleResult {
  /** Item ids whose outcome was recorded (the rest had lost their claim). */
  settled: string[];
  tasks: SettledTask[];
}

export interface Release {
  itemId: string;
  token: string;
  error: ItemError;
  /** Not before this delay (backoff, Retry-After). */
  delayMs: number;
  /** Give the attempt back: the item did not fail, its process is shutting down. */
  refund?: boolean;
}

export interface StopResult {
  /** False when the task was already stopping or finished. */
  changed: boolean;
  /** Pending items marked cancelled by this call. */
  cancelledItems: number;
  task: SettledTask;
}

export interface RetryFailedResult {
  retried: number;
  task: TaskRecord;
}

export interface RecoverResult {
  /** Items whose lease had lapsed and that were put back to pending (their work enqueued). */
  requeued: number;
  /** Items whose lease lapsed on their final attempt, counted as failed. */
  failed: SettleResult;
  /**
   * Each item recovered, for the log lines that name it: put back (`requeued`), failed on its last
   * attempt, or cancelled (its task was stopping). Optional: a store may leave it out.
   */
  items?: { kind: string; taskId: string; itemId: string; attempt: number; outcome: 'requeued' | 'failed' | 'cancelled' }[];
}

export interface ReconcileResult {
  taskId: string;
  /** Counters before and after, when they differed. */
  drift: { field: 'total' | 'succeeded' | 'failed' | 'cancelled'; was: number; now: number }[];
  /** The reconcile found every item settled and finished the task. */
  finished: boolean;
  task: TaskCounts;
}

export interface Page<T> {
  rows: T[];
  nextCursor: string | null;
}

export interface ListTasksQuery {
  kind?: string;
  tenant?: string | null;
  status?: TaskStatus;
  /** Any of these statuses (with `status`, both must hold). */
  statuses?: readonly TaskStatus[];
  /** Only archived tasks (true), only unarchived ones (false), or both (unset). */
  archived?: boolean;
  /** Tasks whose id starts with this (hex digits and dashes). */
  idPrefix?: string;
  limit: number;
  cursor?: string | null;
}

/** `waiting`: pending again after a transient failure, until its retry is due. */
export type ItemFilter = ItemStatus | 'waiting';

export interface ListItemsQuery {
  status?: ItemFilter;
  limit: number;
  cursor?: string | null;
}

/** A task's items by state right now (from the item rows, not the counters). */
export interface ItemCounts {
  total: number;
  /** Pending and never started. */
  queued: number;
  /** Pending again after a transient failure. */
  waitingRetry: number;
  /** The soonest retry of a waiting item. */
  nextRetryAt: Date | null;
  running: number;
  succeeded: number;
  failed: number;
  /** Failed items whose failure may not repeat (see `ItemError.retryable`). */
  retryableFailed: number;
  cancelled: number;
}

/** A task's failed items grouped by error code, biggest group first. */
export interface FailureGroup {
  code: string;
  count: number;
  retryable: number;
  /** One of the group's messages. */
  message: string;
}

/** The tasks of a kind and tenant by status (archived ones apart). */
export interface TaskSummary {
  byStatus: Record<TaskStatus, number>;
  archived: number;
}

/** One stored `ctx.log` line. */
export interface ItemLogEntry {
  taskId: string;
  itemId: string;
  attempt: number;
  at: Date;
  message: string;
  data?: Record<string, unknown> | undefined;
}

/** What `retryFailed` re-runs. */
export interface RetryFailedOptions {
  deadlineAt?: Date | null;
  /** Only these items (failed ones of the task; others are a conflict). */
  itemIds?: readonly string[];
  /** Only failures marked retryable. */
  retryableOnly?: boolean;
  /** The trace context the new round's items continue (the retry's); unset keeps the task's. */
  trace?: Record<string, string> | null;
}

/** A process running a runtime, as it reports itself. */
export interface WorkerPresence {
  id: string;
  role: string;
  host: string;
  pid: number;
  kinds: readonly string[];
  concurrency: number;
  inFlight: number;
  startedAt: Date;
  /** Counters since the process started (limit waits, recoveries...). */
  stats: Record<string, unknown>;
}

export interface WorkerRecord extends WorkerPresence {
  seenAt: Date;
}

/** Items one process settled for one kind within one time bucket. */
export interface MetricSample {
  bucket: Date;
  kind: string;
  settled: number;
  failed: number;
  /** Counts per bound of `DURATION_BOUNDS_MS` (the last counts what is above the last bound). */
  durations: readonly number[];
}

/** Throughput and latency of some kinds over time, all processes together. */
export interface MetricPoint {
  bucket: Date;
  settled: number;
  failed: number;
  durations: number[];
}

/** A strict limit's slots right now. */
export interface SlotUsage {
  name: string;
  slots: number;
  /** Slots not free right now: held (a global limit) or used within the window (a rate limit). */
  busy: number;
}

/**
 * One write of the bookkeeping that follows a task's ending (see `FanoutStore.recordEndings`):
 * its round recorded as announced, its fan-in claimed, or its fan-in recorded as done by the
 * holder of `token`.
 */
export type EndingWrite =
  | { taskId: string; write: 'announced'; round: number }
  | { taskId: string; write: 'claim_fan_in' }
  | { taskId: string; write: 'complete_fan_in'; round: number; token: string };

/** What `recordEndings` did: the tasks whose fan-in it claimed, and the ids whose fan-in it recorded. */
export interface RecordedEndings {
  claimed: TaskRecord[];
  completed: string[];
}

export interface FanoutStore {
  /**
   * Checks that the database has every table and function this store needs, and throws a
   * `FanoutError` with code `schema_outdated` naming the first missing migration. `start()` calls
   * it before anything else, so a database that was not migrated refuses to start.
   */
  checkSchema?(): Promise<void>;

  // -- tasks ---------------------------------------------------------------------------------
  /** Creates a task (status `queued`) and, in the same transaction, enqueues its manager job. */
  createTask(task: NewTask, enqueue: EnqueueTask): Promise<SubmittedTask>;
  /**
   * Creates a task with its dispatch already done, in one transaction: the task (`running`, its
   * `total` final), the items given, and the jobs that take them (`enqueue`, as `insertItems`
   * does); no manager job. With an idempotency key already used, inserts nothing, as `createTask`.
   * `settled` is the task as the dispatch left it (finished when no item is left to run), for
   * the caller to announce; null on a replay. Optional: without it, every task has a manager.
   */
  createDispatchedTask?(task: NewTask, items: readonly NewItem[], enqueue: EnqueueWork, trace: Record<string, string> | null): Promise<DispatchedTask>;
  /**
   * `createDispatchedTask` without the jobs, for a caller that gives the tenant its jobs after
   * the call (a submit: the window's jobs are looked at once the task is stored): the task and
   * its items written with no transaction around them where the store can do it in one statement
   * (all or nothing either way). Optional: without it, a submit goes through `createDispatchedTask`.
   */
  createDispatchedTaskAlone?(task: NewTask, items: readonly NewItem[], trace: Record<string, string> | null): Promise<DispatchedTask>;
  /**
   * The id of the task an idempotency key was used for (by kind and tenant), or null. `submit()`
   * asks before a definition's `checkInput`, so a replay answers its task (or a conflict) even
   * when what it names is gone since. Optional: without it, a replay's input is checked too.
   */
  keyedTask?(kind: string, tenant: string | null, idempotencyKey: string): Promise<string | null>;
  getTask(id: string): Promise<TaskRecord | null>;
  listTasks(query: ListTasksQuery): Promise<Page<TaskRecord>>;
  listItems(taskId: string, query: ListItemsQuery): Promise<Page<ItemRecord>>;
  /** One item of a task, or null when the task has no such item (or its details were deleted). */
  getItem(taskId: string, itemId: string): Promise<ItemRecord | null>;

  // -- manager -------------------------------------------------------------------------------
  /** `queued` -> `running`. Returns the task as it is now (whatever its status), or null. */
  startDispatch(taskId: string, trace?: Record<string, string> | null): Promise<TaskRecord | null>;
  /**
   * Inserts one page of items and raises `total`, skipping keys the task already has, and
   * enqueues jobs for the new pending items, all in one transaction. Inserts nothing unless the
   * task is `running` when the transaction commits. Pages of one task may be inserted
   * concurrently.
   */
  insertItems(taskId: string, items: readonly NewItem[], enqueue: EnqueueWork): Promise<InsertItemsResult>;
  /**
   * Marks dispatch done (`total` is final) and finishes the task if every item is settled.
   * `cutShort`: the listing did not reach its end (the task stopped while it ran), so the task
   * cannot be retried (`retryFailed` would end it `completed` with items that were never listed).
   */
  finishDispatch(taskId: string, options?: { cutShort?: boolean }): Promise<SettledTask | null>;

  // -- children ------------------------------------------------------------------------------
  /**
   * Claims items for one worker: `pending` items of a running task, and `running` items whose
   * lease lapsed (their holder died) and that have attempts left. Sets owner token, lease and
   * attempt number in one conditional update. A claim may be committed without waiting for the
   * disk: losing one in a database crash only sends the item back to be claimed again. The given
   * items are taken whatever their retry delay and their tenant's quotas: the runtime's scheduler
   * claims through `claimNext`, which waits out retry delays and keeps within the quotas it is
   * given; this is for a caller that chose its items (a tool, a test).
   */
  claimItems(itemIds: readonly string[], token: string, leaseMs: number): Promise<ClaimResult>;
  /**
   * Claims up to `limit` of the next pending items (by `seq`, not waiting on a retry delay) of one
   * running task of the tenant: the task after `after` in turn (highest priority first), so that
   * successive claims serve the tenant's tasks round robin. Items locked by a concurrent claim are
   * skipped, never waited for. Same claim as `claimItems` (token, lease, attempt).
   */
  claimNext(query: ClaimNextQuery): Promise<ClaimNextResult>;
  /** Extends the lease of items still held under their tokens. Returns the ids still held. */
  renewLeases(held: ReadonlyArray<{ itemId: string; token: string }>, leaseMs: number): Promise<string[]>;
  /**
   * The worker is done with these claim tokens: every item it claimed with them has its outcome
   * stored, was released, or is no longer held under the token (another claim took it over). A
   * store that keeps a lease per claim rather than per item forgets those claims here, so the
   * maintenance loop never reads them; it must keep one that still holds a running item (an
   * outcome the server acknowledged and then lost in a crash), whose lease then lapses and whose
   * items are recovered. (A claim one of whose outcomes could not be stored is not ended at all.)
   * Optional: without it, a claim is forgotten once its lease lapsed.
   */
  endClaims?(tokens: readonly string[]): Promise<void>;
  /** Records outcomes and moves counters in one transaction; finishes tasks that are done. */
  settleItems(outcomes: readonly Outcome[]): Promise<SettleResult>;
  /**
   * Puts items back to `pending` after a transient failure and enqueues their retry jobs. Only
   * items of running tasks held under their token are released; returns their ids.
   */
  releaseItems(releases: readonly Release[], enqueue: EnqueueWork): Promise<string[]>;
  /** Of these task ids, those that are no longer `running` (their items should stop). */
  stoppedTasks(taskIds: readonly string[]): Promise<string[]>;

  // -- controls ------------------------------------------------------------------------------
  /**
   * Stops a queued or running task: status `stopping` with a reason, every pending item
   * cancelled and counted, and the task finished at once when nothing is left running. A stop
   * for the failure tolerance (`failure_threshold`) applies only to a task its settle already made
   * `stopping` for that reason: one that arrives after the task was retried (a new round,
   * `running`) changes nothing (`changed: false`).
   */
  stopTask(taskId: string, reason: StopReason, error?: string): Promise<StopResult | null>;
  /**
   * Re-opens a finished (`completed` or `failed`) task: its failed items go back to pending for a
   * new round, `failed` is reduced by as many, and their jobs are enqueued in the same transaction.
   */
  retryFailed(taskId: string, enqueue: EnqueueWork, options?: RetryFailedOptions): Promise<RetryFailedResult>;
  /** Hides a finished task from default lists (a `conflict` for an unfinished one). */
  archiveTask(taskId: string): Promise<TaskRecord>;
  /**
   * Deletes a finished task with its items and logs, in bounded statements (marked purged first, so
   * its details answer as gone meanwhile). A `conflict` for an unfinished one; a `conflict` that
   * passes (`retryAfterMs`) while its fan-in runs, and, for a minute after its end at most, while
   * its ending is still to be announced or its fan-in to be taken up (a task being deleted is
   * never taken up for its fan-in).
   */
  deleteTask(taskId: string): Promise<void>;

  // -- reading for people --------------------------------------------------------------------
  /** `statuses` counts only tasks in those (the others count 0): the unfinished, say, read through the status index. */
  taskSummary(query: { kind?: string; tenant?: string | null; statuses?: readonly TaskStatus[] }): Promise<TaskSummary>;
  itemCounts(taskId: string): Promise<ItemCounts>;
  failureGroups(taskId: string): Promise<FailureGroup[]>;
  /**
   * Stores log lines; best effort by the caller (a failure here never fails an item). Rejects with
   * an `invalid_argument` FanoutError when the database refused what a line holds, so the caller
   * stores the batch line by line and loses only that line.
   */
  appendItemLogs(entries: readonly ItemLogEntry[]): Promise<void>;
  /** An item's stored log lines, oldest first. */
  itemLogs(taskId: string, itemId: string, limit: number): Promise<ItemLogEntry[]>;
  /**
   * Counters of the tasks a live view follows: every unfinished task of the tenant and kinds
   * (unless `unfinished` is false), and (when `since` is given) those changed since; newest first.
   */
  liveTaskCounts(query: { tenant: string | null; kinds: readonly string[]; since: Date | null; limit: number; unfinished?: boolean }): Promise<TaskCounts[]>;

  // -- operations ----------------------------------------------------------------------------
  /** Records a process's presence and adds its samples to their buckets. */
  reportPresence(worker: WorkerPresence, samples: readonly MetricSample[]): Promise<void>;
  /** A process that stopped cleanly leaves the list. */
  removeWorker(id: string): Promise<void>;
  /** Processes seen within `withinMs` that work any of `kinds` (all when empty). */
  workers(kinds: readonly string[], withinMs: number): Promise<WorkerRecord[]>;
  /** Buckets since `since` of `kinds`, all processes added up, oldest first. */
  metrics(kinds: readonly string[], since: Date): Promise<MetricPoint[]>;
  slotUsage(): Promise<SlotUsage[]>;
  /** Forgets processes unseen and buckets older than `olderThanMs`. */
  pruneOperations(olderThanMs: number): Promise<void>;

  // -- maintenance ---------------------------------------------------------------------------
  // The steps of the maintenance loop that every worker process runs (see `maintenancePass`).
  /** Items whose lease lapsed: back to pending (their work enqueued), or failed when out of attempts. */
  recoverLapsedItems(limit: number, enqueue: EnqueueWork): Promise<RecoverResult>;
  /**
   * Whether a task has pending items to run now, and when the soonest of those waiting on a retry
   * delay is due (for the maintenance loop's check of quiet tasks).
   */
  pendingWork(taskId: string): Promise<{ now: boolean; nextRetryAt: Date | null }>;
  /**
   * Refreshes the planner statistics of the item table (a dispatch calls it as its task doubles:
   * statistics from when the table was nearly empty make the claim scan). `added` is how many
   * items the dispatch has inserted so far: a store may leave a table alone whose statistics
   * already count many times as many rows (without it, refresh them all). Optional; may throw.
   */
  refreshStatistics?(added?: number): Promise<void>;
  /**
   * Where the runtime sends the pg-boss statements that are not part of one of the store's
   * transactions (a job's successor), when the store has a cheaper way than pg-boss's own pool
   * (the Prisma store on a `pg` pool: prepared statements). Optional.
   */
  sqlExecutor?(): SqlExecutor;
  /**
   * Vacuums those of Fanout's tables whose dead rows (updated and deleted versions) passed a
   * threshold since their last vacuum, and returns their names: under a steady load autovacuum
   * visits a database at most once a minute (`autovacuum_naptime`), and the item table's dead
   * versions pile up between visits. A plain VACUUM (reads and writes go on), skipped for a table
   * another vacuum holds (it is then in the list all the same). Optional.
   */
  vacuumTables?(): Promise<string[]>;
  /** Running tasks past their deadline. */
  overdueTasks(limit: number): Promise<string[]>;
  /**
   * Recomputes counters from item rows and finishes tasks whose items are all settled; a task
   * whose items retention deleted (`purgedAt`) keeps its counters (no drift). The failure
   * tolerance applies to the recomputed counters as a settle's: a running task past it becomes
   * `stopping` (`failure_threshold`), or fails when every item is settled.
   */
  reconcile(taskId: string): Promise<ReconcileResult | null>;
  /**
   * Retention: deletes up to `limit` item rows (and as many item logs) of tasks of `kinds` (this
   * process's definitions) whose purge is under way and not held, else of the oldest tasks of
   * `kinds` that finished more than `olderThanMs` ago, once their ending was announced and their
   * fan-in ran. A task's `purgedAt` is set by the batch that starts on it, so its details answer as
   * gone from the first row deleted. Once nothing is left of the batch's tasks (`purged`), it ends
   * their purge; with `lease` (their definition has a purge hook) it holds them under it instead,
   * still under way, until `finishPurge` with its token. Optional; a store that has it has
   * `finishPurge`, `holdPurge` and `markPurged`.
   */
  purgeFinished?(olderThanMs: number, limit: number, kinds: readonly string[], lease?: PurgeLease): Promise<PurgeResult>;
  /** Ends the purge of tasks held under `token` (their app's purge hook ran); resolves the ids it ended. */
  finishPurge?(taskIds: readonly string[], token: string): Promise<string[]>;
  /** Holds the purge of tasks held under `token` for `ms` more from now (0 lets them go); resolves the ids still held. */
  holdPurge?(taskIds: readonly string[], token: string, ms: number): Promise<string[]>;
  /**
   * Marks a finished task's details as deleted (its `purgedAt`, and its purge under way, held
   * under `lease`), before its app's purge hook runs and the task is deleted: from then on it is
   * never retried, nor taken up for its fan-in. Throws `not_found`, or `conflict` for an unfinished
   * task, or one that passes (`retryAfterMs`) while another process's purge holds it or its ending
   * is still to come (as `deleteTask`).
   */
  markPurged?(taskId: string, lease: PurgeLease): Promise<void>;
  /**
   * Tasks for the maintenance loop to reconcile: not finished, and untouched for `idleMs`. With
   * `maxRunningTasks` (a tenant's cap), a running task waiting its turn behind that many of its
   * tenant's is not one: it has not started, and its turn comes when one of them ends.
   */
  reconcileCandidates(idleMs: number, limit: number, maxRunningTasks?: number | null): Promise<string[]>;
  /**
   * Takes the fan-in of a finished task whose current round has not had it, under a lease held by
   * `token`. Returns the task when this caller should run the hook. With `taskId` (the process
   * that finished the task claims it at once), a task another writer holds for a moment is waited
   * for, not passed over; without it (the maintenance loop), any due task of `kinds` nobody else
   * is claiming.
   */
  claimFanIn(taskId: string | null, kinds: readonly string[], leaseMs: number, token: string): Promise<TaskRecord | null>;
  /** Extends a fan-in lease held under `token`; false when it was lost to another process. */
  renewFanIn(taskId: string, token: string, leaseMs: number): Promise<boolean>;
  /** Records that the fan-in of `round` ran, only for the holder of `token`; false otherwise. */
  completeFanIn(taskId: string, round: number, token: string): Promise<boolean>;
  /** Gives up a fan-in lease after the hook failed, so it is tried again after `retryInMs`. */
  releaseFanIn(taskId: string, token: string, retryInMs: number): Promise<void>;
  /** Records that the ending of `round` was announced (delivered to the durable listeners). */
  markAnnounced(taskId: string, round: number): Promise<void>;
  /**
   * Optional: `markAnnounced` for several tasks in one call. Without it the runtime calls
   * `markAnnounced` for each.
   */
  markAnnouncedMany?(tasks: ReadonlyArray<{ taskId: string; round: number }>): Promise<void>;
  /**
   * Optional: `claimFanIn` for several finished tasks at once, all under one `token`; answers the
   * tasks claimed (those whose fan-in is due and not leased), in no particular order. Without it
   * the runtime claims each with `claimFanIn`.
   */
  claimFanIns?(taskIds: readonly string[], leaseMs: number, token: string): Promise<TaskRecord[]>;
  /**
   * Optional: `completeFanIn` for several tasks in one call; answers the ids whose round was
   * recorded (each only for the holder of its token). Without it the runtime completes each alone.
   */
  completeFanIns?(done: ReadonlyArray<{ taskId: string; round: number; token: string }>): Promise<string[]>;
  /**
   * Optional: the writes of `markAnnouncedMany`, `claimFanIns` (under `token`, for `leaseMs`) and
   * `completeFanIns` together, in one call: what the tasks that finished together need, one
   * statement instead of three. At most one write of each kind per task; a task may have several
   * kinds. Each write applies under the same conditions as in its own method, and a task's
   * fan-in completion before its claim (the claim sees the round recorded). Without it the
   * runtime calls those three.
   */
  recordEndings?(writes: readonly EndingWrite[], leaseMs: number, token: string): Promise<RecordedEndings>;
  /**
   * Finished tasks of `kinds` whose ending was never recorded as announced and that ended more than
   * `graceMs` ago, each claimed for `leaseMs` so one process announces it.
   */
  claimUnannounced(kinds: readonly string[], graceMs: number, leaseMs: number, limit: number): Promise<TaskCounts[]>;

  // -- global limits -------------------------------------------------------------------------
  /** Takes one of `limit` slots of `name` for `holder` until released or `holdMs` passes. */
  acquireSlot(name: string, limit: number, holder: string, holdMs: number): Promise<boolean>;
  /** Extends a held slot; false when the holder no longer has it. */
  renewSlot(name: string, holder: string, holdMs: number): Promise<boolean>;
  releaseSlot(name: string, holder: string): Promise<void>;
  /**
   * Takes one of `limit` rate slots of `name`, each usable once per `intervalMs`: so never more
   * than `limit` takes in any window of `intervalMs`. Returns the database time of the take, or
   * the milliseconds until a slot frees.
   */
  takeRateSlot(name: string, limit: number, intervalMs: number): Promise<{ takenAt: Date } | { waitMs: number }>;
  /** Holders of `name` right now (for tests and dashboards). */
  slotHolders(name: string): Promise<number>;
}
