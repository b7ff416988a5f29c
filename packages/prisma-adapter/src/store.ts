import {
  FanoutError,
  type ClaimResult,
  type DispatchedTask,
  type EndingWrite,
  type EnqueueWork,
  type ClaimNextQuery,
  type ClaimNextResult,
  type EnqueueTask,
  type FanoutStore,
  type InsertItemsResult,
  type ItemRecord,
  type ListItemsQuery,
  type ListTasksQuery,
  type NewItem,
  type NewTask,
  type Outcome,
  type Page,
  type ReconcileResult,
  type RecordedEndings,
  type RecoverResult,
  type Release,
  type RetryFailedResult,
  type SettleResult,
  type StopReason,
  type StopResult,
  type TaskRecord,
  type SettledTask,
  type SubmittedTask,
  type RetryFailedOptions,
  type TaskStatus,
  type TaskSummary,
  type ItemCounts,
  type FailureGroup,
  type ItemLogEntry,
  type TaskCounts,
  type WorkerPresence,
  type MetricSample,
  type WorkerRecord,
  type MetricPoint,
  type SlotUsage,
  type PurgeLease,
  type PurgeResult,
  type SqlExecutor,
} from '@fanout/core';
import { executor } from './executor.ts';
import { assertFanoutSchema } from './migrations/check.ts';
import { toCounts } from './rows.ts';
import { isUuid } from './ids.ts';
import { poolQueryable, poolTransaction } from './pool.ts';
import type { PgPoolLike, PrismaClientLike, PrismaQueryable } from './prisma-like.ts';
import { retryOnConflict, sqlStateOf } from './retry-on-conflict.ts';
import * as announce from './sql/announce.ts';
import * as claim from './sql/claim.ts';
import * as controls from './sql/controls.ts';
import * as dispatch from './sql/dispatch.ts';
import * as endings from './sql/endings.ts';
import * as fanIn from './sql/fan-in.ts';
import * as limits from './sql/limits.ts';
import * as logs from './sql/logs.ts';
import * as operations from './sql/operations.ts';
import * as maintenance from './sql/maintenance.ts';
import * as reads from './sql/reads.ts';
import * as retention from './sql/retention.ts';
import * as settle from './sql/settle.ts';

/**
 * The tables `vacuumTables` may vacuum, Fanout's busiest, each with the dead rows that make it due
 * (or a tenth of its live rows, if more). The claim table holds only the claims in flight, but every
 * claim is a row inserted, renewed and deleted, each version with its claim's item ids (1.6 KB for
 * 100 items); the maintenance loop reads it at every pass for lapsed leases, and at 10,000 dead rows
 * that read went through thousands of dead rows (17 ms on average, 80 at most, in a run of a
 * million items, between autovacuum's visits a minute apart).
 */
const VACUUMED_TABLES = { fanout_item: 10_000, fanout_ready: 10_000, fanout_claim: 500, fanout_item_log: 10_000, fanout_task: 10_000 } as const;
type VacuumedTable = keyof typeof VACUUMED_TABLES;

export interface PrismaFanoutStoreOptions {
  /**
   * Bounds of the store's interactive transactions (a dispatch page with its jobs is the
   * longest). @default { maxWait: 10000, timeout: 60000 }
   */
  transaction?: { maxWait?: number; timeout?: number };
  /**
   * The `pg` pool your Prisma client's adapter runs on (`new PrismaPg(pool)`). When given, the
   * store sends its SQL (the same parameterised statements, and its transactions) straight
   * through this pool instead of through Prisma's query pipeline, which costs CPU per statement,
   * the more so with large array parameters such as a dispatch page. Measured with `pnpm bench`
   * at 10,000 items: a worker process's CPU 0.68 to 0.44 s, the manager's 0.23 to 0.13 s.
   * Your own Prisma queries and transactions share the pool's connections as before. Give the
   * pool an `'error'` listener (an idle connection that dies would otherwise end the process), and
   * keep pg's default parsers for `timestamptz`, `jsonb`, `int4` and `uuid[]`, which the store reads.
   */
  pool?: PgPoolLike;
  /**
   * With `pool`: send each of the store's statements as a named prepared statement, parsed once
   * per connection, instead of parsing and planning it at every call (with 20 ms items on two
   * worker processes, parsing and planning were a fifth of the server's CPU). Set `false` when
   * the pool's connections go through a pooler in transaction mode that does not keep prepared
   * statements (PgBouncer before 1.21, or without `max_prepared_statements`). @default true
   */
  preparedStatements?: boolean;
}

/**
 * The Fanout store on Prisma 7. Every counter move is SQL arithmetic in the same statement or
 * transaction as the item change that causes it; every claim is a conditional update. The
 * statements live in `./sql/` by concern (dispatch, claim, settle, controls, maintenance, fan-in,
 * limits, reads, logs, operations); this class chooses where they run (the pool or Prisma, in a transaction or
 * not), retries those that lost a deadlock, and turns ids that cannot exist into "not found".
 */
export class PrismaFanoutStore implements FanoutStore {
  readonly #prisma: PrismaClientLike;
  readonly #pool: PgPoolLike | null;
  /** Where statements outside transactions go: the pool when given, else Prisma. */
  readonly #db: PrismaQueryable;
  readonly #tx: { maxWait: number; timeout: number };
  readonly #prepared: boolean;
  /**
   * Over the pool only: pg-boss's statements outside the store's transactions (a job's successor)
   * go through it as prepared statements (planning pg-boss's insert cost more than running it).
   */
  readonly sqlExecutor?: () => SqlExecutor;
  readonly #slotsReady = new Set<string>();

  constructor(prisma: PrismaClientLike, options: PrismaFanoutStoreOptions = {}) {
    this.#prisma = prisma;
    this.#pool = options.pool ?? null;
    this.#prepared = options.preparedStatements ?? true;
    this.#db = this.#pool ? poolQueryable(this.#pool, { prepared: this.#prepared }) : prisma;
    if (this.#pool) {
      const viaPool = executor(this.#db);
      this.sqlExecutor = () => viaPool;
    }
    this.#tx = { maxWait: options.transaction?.maxWait ?? 10_000, timeout: options.transaction?.timeout ?? 60_000 };
  }

  #transaction<T>(fn: (tx: PrismaQueryable) => Promise<T>): Promise<T> {
    if (this.#pool) return poolTransaction(this.#pool, this.#tx, fn, { prepared: this.#prepared });
    return this.#prisma.$transaction(fn, this.#tx);
  }

  /** Throws `schema_outdated` naming the first Fanout migration the database lacks. */
  async checkSchema(): Promise<void> {
    await assertFanoutSchema(this.#db);
  }

  // -- tasks -----------------------------------------------------------------------------------

  async createTask(task: NewTask, enqueue: EnqueueTask): Promise<SubmittedTask> {
    return this.#transaction((tx) => dispatch.insertTask(tx, task, enqueue));
  }

  async keyedTask(kind: string, tenant: string | null, idempotencyKey: string): Promise<string | null> {
    return dispatch.keyedTask(this.#db, kind, tenant, idempotencyKey);
  }

  async createDispatchedTask(task: NewTask, items: readonly NewItem[], enqueue: EnqueueWork, trace: Record<string, string> | null): Promise<DispatchedTask> {
    return this.#transaction((tx) => dispatch.insertDispatchedTask(tx, task, items, enqueue, trace));
  }

  async createDispatchedTaskAlone(task: NewTask, items: readonly NewItem[], trace: Record<string, string> | null): Promise<DispatchedTask> {
    // Without jobs to enqueue, the one statement is the whole write: no transaction around it.
    return dispatch.insertDispatchedTask(this.#db, task, items, null, trace);
  }

  async getTask(id: string): Promise<TaskRecord | null> {
    if (!isUuid(id)) return null;
    return reads.getTask(this.#db, id);
  }

  async listTasks(query: ListTasksQuery): Promise<Page<TaskRecord>> {
    return reads.listTasks(this.#db, query);
  }

  async listItems(taskId: string, query: ListItemsQuery): Promise<Page<ItemRecord>> {
    if (!isUuid(taskId)) return { rows: [], nextCursor: null };
    return reads.listItems(this.#db, taskId, query);
  }

  async getItem(taskId: string, itemId: string): Promise<ItemRecord | null> {
    if (!isUuid(taskId) || !isUuid(itemId)) return null;
    return reads.getItem(this.#db, taskId, itemId);
  }

  // -- manager ---------------------------------------------------------------------------------

  async startDispatch(taskId: string, trace?: Record<string, string> | null): Promise<TaskRecord | null> {
    if (!isUuid(taskId)) return null;
    return (await dispatch.startDispatch(this.#db, taskId, trace ?? null)) ?? this.getTask(taskId);
  }

  async insertItems(taskId: string, items: readonly NewItem[], enqueue: EnqueueWork): Promise<InsertItemsResult> {
    if (!isUuid(taskId)) throw new FanoutError('not_found', `task ${taskId} does not exist`, { field: 'taskId' });
    try {
      return await this.#transaction((tx) => dispatch.insertItemPage(tx, taskId, items, enqueue));
    } catch (error) {
      if (!(error instanceof dispatch.StoppedWhileInserting)) throw error;
      const task = await this.getTask(taskId);
      return { inserted: 0, status: task?.status ?? 'cancelled' };
    }
  }

  async finishDispatch(taskId: string, options: { cutShort?: boolean } = {}): Promise<SettledTask | null> {
    return dispatch.finishDispatch(this.#db, taskId, options.cutShort ?? false);
  }

  // -- children --------------------------------------------------------------------------------

  async claimItems(itemIds: readonly string[], token: string, leaseMs: number): Promise<ClaimResult> {
    const ids = itemIds.filter(isUuid);
    if (ids.length === 0) return { claimed: [], skipped: [...itemIds] };
    const claimed = await retryOnConflict(() => this.#transaction((tx) => claim.claimItems(tx, ids, token, leaseMs)));
    const claimedIds = new Set(claimed.map((c) => c.itemId));
    return { claimed, skipped: itemIds.filter((id) => !claimedIds.has(id)) };
  }

  async claimNext(query: ClaimNextQuery): Promise<ClaimNextResult> {
    const limit = Math.max(0, Math.floor(query.limit));
    if (query.maxInFlight === undefined || query.maxInFlight === null) {
      return retryOnConflict(() => claim.claimNext(this.#db, query, limit));
    }
    // A quota is exact: claims of one kind and tenant count and take under one advisory lock.
    const quota = query.maxInFlight;
    return retryOnConflict(() =>
      this.#transaction(async (tx) => {
        // (`void` is not a type the driver adapter reads, hence the constant column.)
        await tx.$queryRaw`SELECT 1 AS locked FROM pg_advisory_xact_lock(hashtextextended(${`fanout-quota:${query.kind}:${query.tenant ?? ''}`}::text, 0))`;
        const room = Math.min(limit, quota - (await claim.runningOfTenant(tx, query.kind, query.tenant)));
        if (room <= 0) return { claimed: [], taskId: null, atQuota: true };
        return claim.claimNext(tx, query, room);
      }),
    );
  }

  async renewLeases(held: ReadonlyArray<{ itemId: string; token: string }>, leaseMs: number): Promise<string[]> {
    if (held.length === 0) return [];
    return claim.renewLeases(this.#db, held, leaseMs);
  }

  async endClaims(tokens: readonly string[]): Promise<void> {
    const valid = tokens.filter(isUuid);
    if (valid.length > 0) await claim.endClaims(this.#db, valid);
  }

  async settleItems(outcomes: readonly Outcome[]): Promise<SettleResult> {
    if (outcomes.length === 0) return { settled: [], tasks: [] };
    return retryOnConflict(() => settle.settleAndIncrement(this.#db, outcomes));
  }

  async releaseItems(releases: readonly Release[], enqueue: EnqueueWork): Promise<string[]> {
    if (releases.length === 0) return [];
    return this.#transaction((tx) => claim.releaseClaims(tx, releases, enqueue));
  }

  async stoppedTasks(taskIds: readonly string[]): Promise<string[]> {
    const ids = taskIds.filter(isUuid);
    if (ids.length === 0) return [];
    return reads.stoppedTasks(this.#db, ids);
  }

  // -- controls --------------------------------------------------------------------------------

  async stopTask(taskId: string, reason: StopReason, error?: string): Promise<StopResult | null> {
    if (!isUuid(taskId)) return null;
    return retryOnConflict(() => this.#transaction((tx) => controls.stopTask(tx, taskId, reason, error)));
  }

  async retryFailed(taskId: string, enqueue: EnqueueWork, options: RetryFailedOptions = {}): Promise<RetryFailedResult> {
    if (!isUuid(taskId)) throw new FanoutError('not_found', `task ${taskId} does not exist`, { field: 'taskId' });
    const bad = options.itemIds?.find((id) => !isUuid(id));
    if (bad !== undefined) throw new FanoutError('not_found', `item ${bad} does not exist`, { field: 'itemId' });
    return this.#transaction((tx) => controls.retryFailedItems(tx, taskId, enqueue, options));
  }

  async archiveTask(taskId: string): Promise<TaskRecord> {
    if (!isUuid(taskId)) throw new FanoutError('not_found', `task ${taskId} does not exist`, { field: 'taskId' });
    return controls.archiveTask(this.#db, taskId);
  }

  async deleteTask(taskId: string): Promise<void> {
    if (!isUuid(taskId)) throw new FanoutError('not_found', `task ${taskId} does not exist`, { field: 'taskId' });
    await controls.deleteTask(this.#db, taskId);
  }

  async markPurged(taskId: string, lease: PurgeLease): Promise<void> {
    if (!isUuid(taskId)) throw new FanoutError('not_found', `task ${taskId} does not exist`, { field: 'taskId' });
    await retention.markPurged(this.#db, taskId, lease);
  }

  // -- reading for people ----------------------------------------------------------------------

  async taskSummary(query: { kind?: string; tenant?: string | null; statuses?: readonly TaskStatus[] }): Promise<TaskSummary> {
    return reads.taskSummary(this.#db, query);
  }

  async itemCounts(taskId: string): Promise<ItemCounts> {
    if (!isUuid(taskId)) throw new FanoutError('not_found', `task ${taskId} does not exist`, { field: 'taskId' });
    return reads.itemCounts(this.#db, taskId);
  }

  async failureGroups(taskId: string): Promise<FailureGroup[]> {
    if (!isUuid(taskId)) return [];
    return reads.failureGroups(this.#db, taskId);
  }

  async appendItemLogs(entries: readonly ItemLogEntry[]): Promise<void> {
    const valid = entries.filter((e) => isUuid(e.taskId) && isUuid(e.itemId));
    await logs.appendItemLogs(this.#db, valid);
  }

  async itemLogs(taskId: string, itemId: string, limit: number): Promise<ItemLogEntry[]> {
    if (!isUuid(taskId) || !isUuid(itemId)) return [];
    return logs.itemLogs(this.#db, taskId, itemId, Math.max(1, Math.min(10_000, limit)));
  }

  async liveTaskCounts(query: { tenant: string | null; kinds: readonly string[]; since: Date | null; limit: number; unfinished?: boolean }): Promise<TaskCounts[]> {
    return (await reads.liveTaskCounts(this.#db, query)).map(toCounts);
  }

  // -- operations ------------------------------------------------------------------------------

  async reportPresence(worker: WorkerPresence, samples: readonly MetricSample[]): Promise<void> {
    await operations.reportPresence(this.#db, worker, samples);
  }

  async removeWorker(id: string): Promise<void> {
    if (isUuid(id)) await operations.removeWorker(this.#db, id);
  }

  async workers(kinds: readonly string[], withinMs: number): Promise<WorkerRecord[]> {
    return operations.workers(this.#db, kinds, withinMs);
  }

  async metrics(kinds: readonly string[], since: Date): Promise<MetricPoint[]> {
    return operations.metrics(this.#db, kinds, since);
  }

  async slotUsage(): Promise<SlotUsage[]> {
    return operations.slotUsage(this.#db);
  }

  async pruneOperations(olderThanMs: number): Promise<void> {
    await operations.pruneOperations(this.#db, olderThanMs);
  }

  // -- maintenance -----------------------------------------------------------------------------

  async pendingWork(taskId: string): Promise<{ now: boolean; nextRetryAt: Date | null }> {
    if (!isUuid(taskId)) return { now: false, nextRetryAt: null };
    return maintenance.pendingWork(this.#db, taskId);
  }

  async vacuumTables(): Promise<string[]> {
    // Dead rows past a tenth of the live ones (at least the table's minimum), and no vacuum of the
    // table in the last 10 s: under a steady load, every few passes. The names come from this fixed
    // list only.
    const tables = Object.keys(VACUUMED_TABLES) as VacuumedTable[];
    const due = await this.#db.$queryRaw<{ name: string }[]>`
      SELECT s.relname AS name FROM pg_stat_user_tables s
      JOIN unnest(${tables}::regclass[], ${tables.map((t) => VACUUMED_TABLES[t])}::int[]) AS v(relid, min_dead) ON v.relid = s.relid
      WHERE s.n_dead_tup > GREATEST(v.min_dead, s.n_live_tup / 10)
        AND COALESCE(GREATEST(s.last_vacuum, s.last_autovacuum), '-infinity') < now() - interval '10 seconds'`;
    const vacuumed: string[] = [];
    for (const { name } of due) {
      const table = tables.find((t) => t === name);
      if (!table) continue;
      // Outside a transaction (VACUUM cannot run in one); SKIP_LOCKED: a table another vacuum holds
      // (autovacuum, or another process's pass) is left to it instead of waited for.
      await this.#db.$queryRawUnsafe(`VACUUM (SKIP_LOCKED) "${table}"`);
      vacuumed.push(table);
    }
    return vacuumed;
  }

  async refreshStatistics(added?: number): Promise<void> {
    // ANALYZE waits at most 200 ms for its lock, and gives up: an autovacuum of the table holds a
    // conflicting one, and a request still waiting after deadlock_timeout (1 s) cancels it. Under
    // a steady load those cancels kept the table from ever being vacuumed, so the space of deleted
    // and updated rows was never reused. Autovacuum analyzes the table itself, every column.
    // Of the item table, only the columns the claims and the maintenance loop filter on: the JSON
    // columns (snapshot, result, error) and the unique ids made it 3 to 4 times dearer (310-450 ms
    // against 90-100 ms for 160,000 items on PostgreSQL 15), at every doubling of every large
    // dispatch. The ready rows, which the claims read first, are narrow.
    // With `added` (the rows the dispatch inserted so far), a table is analyzed only when they are
    // at least a tenth of the rows its statistics already count (autovacuum analyzes a table once
    // a tenth of it changed): on an item table holding the history of earlier tasks, the
    // statistics already say it is large, and an ANALYZE there sampled the whole table for 0.5 s
    // or more at every doubling, the dispatch waiting.
    const due = added === undefined ? null : await maintenance.statisticsDue(this.#db, added);
    if (due && !due.ready && !due.item) return;
    await this.#transaction(async (tx) => {
      await tx.$queryRaw`SELECT set_config('lock_timeout', '200ms', true)`;
      if (!due || due.ready) await tx.$queryRaw`ANALYZE "fanout_ready"`;
      if (!due || due.item) await tx.$queryRaw`ANALYZE "fanout_item" (task_id, status, seq)`;
    }).catch((error: unknown) => {
      // 55P03: the lock was not granted in time; the next doubling of the dispatch tries again.
      if (sqlStateOf(error) !== '55P03' && !String((error as Error)?.message).includes('lock timeout')) throw error;
    });
  }

  async recoverLapsedItems(limit: number, enqueue: EnqueueWork): Promise<RecoverResult> {
    // Nearly every pass finds nothing: one statement says so, instead of a transaction's three
    // round trips (which is what the step's time was, on a busy database).
    if (!(await maintenance.anyLapsedItem(this.#db))) return { requeued: 0, failed: { settled: [], tasks: [] } };
    return retryOnConflict(() => this.#transaction((tx) => maintenance.recoverLapsedItems(tx, limit, enqueue)));
  }

  async overdueTasks(limit: number): Promise<string[]> {
    return maintenance.overdueTasks(this.#db, limit);
  }

  async reconcile(taskId: string): Promise<ReconcileResult | null> {
    if (!isUuid(taskId)) return null;
    return this.#transaction((tx) => maintenance.reconcileTask(tx, taskId));
  }

  async purgeFinished(olderThanMs: number, limit: number, kinds: readonly string[], lease?: PurgeLease): Promise<PurgeResult> {
    return this.#transaction((tx) => retention.purgeFinished(tx, olderThanMs, limit, kinds, lease));
  }

  async finishPurge(taskIds: readonly string[], token: string): Promise<string[]> {
    return taskIds.length > 0 ? retention.finishPurge(this.#db, taskIds, token) : [];
  }

  async holdPurge(taskIds: readonly string[], token: string, ms: number): Promise<string[]> {
    return taskIds.length > 0 ? retention.holdPurge(this.#db, taskIds, token, ms) : [];
  }

  async reconcileCandidates(idleMs: number, limit: number, maxRunningTasks: number | null = null): Promise<string[]> {
    return maintenance.reconcileCandidates(this.#db, idleMs, limit, maxRunningTasks);
  }

  async claimFanIn(taskId: string | null, kinds: readonly string[], leaseMs: number, token: string): Promise<TaskRecord | null> {
    if (taskId !== null && !isUuid(taskId)) return null;
    return fanIn.claimFanIn(this.#db, taskId, kinds, leaseMs, token);
  }

  async renewFanIn(taskId: string, token: string, leaseMs: number): Promise<boolean> {
    return fanIn.renewFanIn(this.#db, taskId, token, leaseMs);
  }

  async completeFanIn(taskId: string, round: number, token: string): Promise<boolean> {
    return fanIn.completeFanIn(this.#db, taskId, round, token);
  }

  async claimFanIns(taskIds: readonly string[], leaseMs: number, token: string): Promise<TaskRecord[]> {
    const ids = taskIds.filter(isUuid);
    return ids.length === 0 ? [] : retryOnConflict(() => fanIn.claimFanIns(this.#db, ids, leaseMs, token));
  }

  async completeFanIns(done: ReadonlyArray<{ taskId: string; round: number; token: string }>): Promise<string[]> {
    const valid = done.filter((d) => isUuid(d.taskId) && isUuid(d.token));
    return valid.length === 0 ? [] : retryOnConflict(() => fanIn.completeFanIns(this.#db, valid));
  }

  async recordEndings(writes: readonly EndingWrite[], leaseMs: number, token: string): Promise<RecordedEndings> {
    // A write naming an id that is not a UUID names no task (as in the methods it stands for).
    const valid = writes.filter((w) => isUuid(w.taskId) && (w.write !== 'complete_fan_in' || isUuid(w.token)));
    return valid.length === 0 ? { claimed: [], completed: [] } : retryOnConflict(() => endings.recordEndings(this.#db, valid, leaseMs, token));
  }

  async releaseFanIn(taskId: string, token: string, retryInMs: number): Promise<void> {
    await fanIn.releaseFanIn(this.#db, taskId, token, retryInMs);
  }

  async markAnnounced(taskId: string, round: number): Promise<void> {
    if (isUuid(taskId)) await announce.markAnnounced(this.#db, taskId, round);
  }

  async markAnnouncedMany(tasks: ReadonlyArray<{ taskId: string; round: number }>): Promise<void> {
    const valid = tasks.filter((t) => isUuid(t.taskId));
    if (valid.length > 0) await retryOnConflict(() => announce.markAnnouncedMany(this.#db, valid));
  }

  async claimUnannounced(kinds: readonly string[], graceMs: number, leaseMs: number, limit: number): Promise<TaskCounts[]> {
    return announce.claimUnannounced(this.#db, kinds, graceMs, leaseMs, limit);
  }

  // -- global limits ---------------------------------------------------------------------------

  /** Creates the slot rows of `name` once per process and limit. */
  async #ensureSlots(name: string, limit: number): Promise<void> {
    const key = `${name}\u0000${limit}`;
    if (this.#slotsReady.has(key)) return;
    await limits.createSlots(this.#db, name, limit);
    this.#slotsReady.add(key);
  }

  async acquireSlot(name: string, limit: number, holder: string, holdMs: number): Promise<boolean> {
    await this.#ensureSlots(name, limit);
    return limits.acquireSlot(this.#db, name, limit, holder, holdMs);
  }

  async renewSlot(name: string, holder: string, holdMs: number): Promise<boolean> {
    return limits.renewSlot(this.#db, name, holder, holdMs);
  }

  async releaseSlot(name: string, holder: string): Promise<void> {
    await limits.releaseSlot(this.#db, name, holder);
  }

  async takeRateSlot(name: string, limit: number, intervalMs: number): Promise<{ takenAt: Date } | { waitMs: number }> {
    await this.#ensureSlots(name, limit);
    return limits.takeRateSlot(this.#db, name, limit, intervalMs);
  }

  async slotHolders(name: string): Promise<number> {
    return limits.slotHolders(this.#db, name);
  }
}

/**
 * The Fanout store over your Prisma client (Prisma 7 with `@prisma/adapter-pg`). Your schema
 * must contain the Fanout models (`fanout copy-schema`, or `schemaPath`), and your database every
 * Fanout migration (`fanout migrate`, or `applyFanoutMigrations`); `checkSchema()` tells.
 */
export function prismaFanoutStore(prisma: PrismaClientLike, options?: PrismaFanoutStoreOptions): PrismaFanoutStore {
  return new PrismaFanoutStore(prisma, options);
}
