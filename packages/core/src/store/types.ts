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
  createdAt: Date;
  startedAt: Date | null;
  completedAt: Date | null;
  updatedAt: Date;
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
}

/**
 * Runs SQL inside the store's open transaction. pg-boss accepts it as its `db` option, which is
 * how jobs are enqueued in the same transaction as the rows they point at.
 */
export interface SqlExecutor {
  executeSql(text: string, values?: unknown[]): Promise<{ rows: any[] }>;
}

/** An item that needs a child job; `delayMs` postpones it (retry backoff). */
export interface ItemToEnqueue {
  id: string;
  taskId: string;
  kind: string;
  delayMs?: number;
}

/** Called inside the store's transaction to enqueue jobs for the given items. */
export type EnqueueItems = (tx: SqlExecutor, items: readonly ItemToEnqueue[]) => Promise<void>;
/** Called inside the store's transaction to enqueue the manager job of a new task. */
export type EnqueueTask = (tx: SqlExecutor, task: TaskRecord) => Promise<void>;

export interface NewTask {
  kind: string;
  tenant?: string | null;
  input: unknown;
  maxAttempts: number;
  maxFailures?: number | null;
  maxFailureRatio?: number | null;
  deadlineAt?: Date | null;
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
  /** Items whose lease had lapsed and that were put back to pending with a fresh job. */
  requeued: number;
  /** Items whose lease lapsed on their final attempt, counted as failed. */
  failed: SettleResult;
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
  limit: number;
  cursor?: string | null;
}

export interface ListItemsQuery {
  status?: ItemStatus;
  limit: number;
  cursor?: string | null;
}

export interface FanoutStore {
  // -- tasks ---------------------------------------------------------------------------------
  /** Creates a task (status `queued`) and, in the same transaction, enqueues its manager job. */
  createTask(task: NewTask, enqueue: EnqueueTask): Promise<TaskRecord>;
  getTask(id: string): Promise<TaskRecord | null>;
  listTasks(query: ListTasksQuery): Promise<Page<TaskRecord>>;
  listItems(taskId: string, query: ListItemsQuery): Promise<Page<ItemRecord>>;

  // -- manager -------------------------------------------------------------------------------
  /** `queued` -> `running`. Returns the task as it is now (whatever its status), or null. */
  startDispatch(taskId: string): Promise<TaskRecord | null>;
  /**
   * Inserts one page of items and raises `total`, skipping keys the task already has, and
   * enqueues jobs for the new pending items, all in one transaction. Inserts nothing unless the
   * task is `running` when the transaction commits. Pages of one task may be inserted
   * concurrently.
   */
  insertItems(taskId: string, items: readonly NewItem[], enqueue: EnqueueItems): Promise<InsertItemsResult>;
  /** Marks dispatch done (`total` is final) and finishes the task if every item is settled. */
  finishDispatch(taskId: string): Promise<SettledTask | null>;

  // -- children ------------------------------------------------------------------------------
  /**
   * Claims items for one worker: `pending` items of a running task, and `running` items whose
   * lease lapsed (their holder died) and that have attempts left. Sets owner token, lease and
   * attempt number in one conditional update. A claim may be committed without waiting for the
   * disk: losing one in a database crash only sends the item back to be claimed again.
   */
  claimItems(itemIds: readonly string[], token: string, leaseMs: number): Promise<ClaimResult>;
  /** Extends the lease of items still held under their tokens. Returns the ids still held. */
  renewLeases(held: ReadonlyArray<{ itemId: string; token: string }>, leaseMs: number): Promise<string[]>;
  /** Records outcomes and moves counters in one transaction; finishes tasks that are done. */
  settleItems(outcomes: readonly Outcome[]): Promise<SettleResult>;
  /**
   * Puts items back to `pending` after a transient failure and enqueues their retry jobs. Only
   * items of running tasks held under their token are released; returns their ids.
   */
  releaseItems(releases: readonly Release[], enqueue: EnqueueItems): Promise<string[]>;
  /** Of these task ids, those that are no longer `running` (their items should stop). */
  stoppedTasks(taskIds: readonly string[]): Promise<string[]>;

  // -- controls ------------------------------------------------------------------------------
  /**
   * Stops a queued or running task: status `stopping` with a reason, every pending item
   * cancelled and counted, and the task finished at once when nothing is left running.
   */
  stopTask(taskId: string, reason: StopReason, error?: string): Promise<StopResult | null>;
  /**
   * Re-opens a finished (`completed` or `failed`) task: its failed items go back to pending for a
   * new round, `failed` is reduced by as many, and their jobs are enqueued in the same transaction.
   */
  retryFailed(taskId: string, enqueue: EnqueueItems, options?: { deadlineAt?: Date | null }): Promise<RetryFailedResult>;

  // -- maintenance ---------------------------------------------------------------------------
  // The steps of the maintenance loop that every worker process runs (see `maintenancePass`).
  /** Items whose lease lapsed: requeued with a fresh job, or failed when out of attempts. */
  recoverLapsedItems(limit: number, enqueue: EnqueueItems): Promise<RecoverResult>;
  /** Running tasks past their deadline. */
  overdueTasks(limit: number): Promise<string[]>;
  /** Recomputes counters from item rows and finishes tasks whose items are all settled. */
  reconcile(taskId: string): Promise<ReconcileResult | null>;
  /** Tasks for the maintenance loop to reconcile: not finished, and untouched for `idleMs`. */
  reconcileCandidates(idleMs: number, limit: number): Promise<string[]>;
  /**
   * Takes the fan-in of a finished task whose current round has not had it, under a lease.
   * Returns the task when this caller should run the hook.
   */
  claimFanIn(taskId: string | null, kinds: readonly string[], leaseMs: number): Promise<TaskRecord | null>;
  /** Records that the fan-in of `round` ran. */
  completeFanIn(taskId: string, round: number): Promise<void>;
  /** Gives up a fan-in lease after the hook failed, so it is tried again after `retryInMs`. */
  releaseFanIn(taskId: string, retryInMs: number): Promise<void>;

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
