import { randomUUID } from 'node:crypto';
import { PgBoss, type ConstructorOptions, type JobWithMetadata } from 'pg-boss';
import type { z } from 'zod';
import { resolveLimits, type AnyFanoutDefinition, type FanoutDefinition } from '../define/define-fanout.ts';
import { assertJobPayload } from '../define/names.ts';
import { FanoutError } from '../errors/errors.ts';
import { FanoutEvents } from '../events/events.ts';
import { delay as abortableDelay } from '../limits/abortable.ts';
import { GlobalLimit, RateLimit, type GlobalLimitOptions, type RateLimitOptions } from '../limits/global-limit.ts';
import {
  isTerminalTaskStatus,
  taskCountsOf,
  type FanoutStore,
  type EnqueueWork,
  type ItemRecord,
  type ListItemsQuery,
  type ListTasksQuery,
  type NewItem,
  type NewTask,
  type ReconcileResult,
  type SettleResult,
  type SettledTask,
  type SqlExecutor,
  type SubmittedTask,
  type TaskCounts,
  type TaskRecord,
} from '../store/types.ts';
import { createHash } from 'node:crypto';
import { Presence } from '../operations/presence.ts';
import { operationsSnapshot, type OperationsSnapshot } from '../operations/snapshot.ts';
import { RuntimeStats } from '../operations/runtime-stats.ts';
import { ChildRunner } from './child-runner.ts';
import { DEFAULT_SCHEDULING, ticketsFor, dueTicket, windowTickets, type SchedulingSettings, type TicketData, type TicketJob } from './scheduler.ts';
import { ItemLogBuffer } from './item-log-buffer.ts';
import { storableProblem } from './storable.ts';
import type { RuntimeContext, WorkerSettings } from './context.ts';
import { childLogger, consoleLogger, errorFields, maskedLogger, taskFields, type Logger } from './logger.ts';
import { Endings } from './endings.ts';
import { nameRecurringStatements, type BossDb } from './boss-statements.ts';
import { FAILURE_THRESHOLD_ERROR, maintenanceHooksIdle, maintenancePass, retentionMargin, withPurgeLease, type MaintenanceSettings } from './maintenance.ts';
import { FanoutTelemetry, type TelemetryOptions } from '../telemetry/telemetry.ts';
import { listAtSubmit, runManager, type ManagerJobData } from './manager.ts';
import { uuidv7 } from '../store/ids.ts';

export interface FanoutRuntimeOptions {
  store: FanoutStore;
  /**
   * A started pg-boss instance you own, or options to create one (the runtime then starts and
   * stops it). Use the same database as the store: jobs are enqueued in the store's transactions.
   */
  boss: PgBoss | ConstructorOptions;
  /**
   * A pg-boss the runtime creates sends the statements it runs again and again (fetching and
   * completing jobs) as named prepared statements, parsed and planned once per connection instead
   * of at every call. Set `false` when its connections go through a pooler in transaction mode
   * that does not keep prepared statements (as the Prisma store's `preparedStatements`). An app's
   * own PgBoss, or a `db` of its own in pg-boss's options, is left as it is. @default true
   */
  bossPreparedStatements?: boolean;
  definitions: readonly AnyFanoutDefinition[];
  /** @default JSON lines on stderr from `warn` up */
  logger?: Logger;
  worker?: Partial<WorkerSettings>;
  maintenance?: Partial<MaintenanceSettings>;
  /** How items are shared between tenants and tasks (see `SchedulingSettings`); the same in every process. */
  scheduling?: Partial<SchedulingSettings>;
  /**
   * OpenTelemetry: traces and metrics go to the global providers unless given here (nothing is
   * recorded until an SDK is registered). A pg-boss the runtime creates gets the same providers.
   */
  telemetry?: TelemetryOptions;
}

export interface StartOptions {
  /** Work manager jobs in this process. @default true */
  managers?: boolean;
  /** Work child jobs in this process. @default true */
  children?: boolean;
  /**
   * Run the maintenance loop in this process (recover lapsed claims, stop overdue tasks, reconcile
   * idle tasks, requeue orphaned items, run pending fan-ins). @default true
   */
  maintenance?: boolean;
  /**
   * Report this process (presence, counters, throughput) to the store every few seconds, for the
   * operations view. @default true
   */
  presence?: boolean;
  /** The role shown for this process. @default 'worker' when it works jobs, else 'api' */
  role?: string;
}

export interface SubmitOptions {
  tenant?: string | null;
  /** Fail the task early once more than this many items failed. Overrides the definition. */
  maxFailures?: number | null;
  /** Fail the task early once more than this share (0..1) of its items failed. */
  maxFailureRatio?: number | null;
  /** Fail the task (cancelling what is left) after this long. */
  deadlineMs?: number | null;
  /**
   * A client's key for this submit (an HTTP `Idempotency-Key`): a second submit with the same key,
   * kind and tenant returns the first task (`replayed: true`) instead of creating one; with
   * different input or options it is a `conflict`.
   */
  idempotencyKey?: string | null;
  /**
   * Among the running tasks of its tenant (and definition), a higher priority is served first;
   * tasks of equal priority take turns. An integer from -100 to 100. @default 0
   */
  priority?: number;
}

/** A PgBoss instance, from any copy of pg-boss: options objects have none of these methods. */
function isPgBossInstance(boss: unknown): boss is PgBoss {
  const candidate = boss as Partial<Record<'start' | 'work' | 'insert' | 'createQueue', unknown>> | null;
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    typeof candidate.start === 'function' &&
    typeof candidate.work === 'function' &&
    typeof candidate.insert === 'function' &&
    typeof candidate.createQueue === 'function'
  );
}

const DEFAULT_WORKER: WorkerSettings = {
  concurrency: 10,
  batchSize: 100,
  leaseMs: 15_000,
  controlPollMs: 1_000,
  pollingIntervalSeconds: 0.5,
  managerConcurrency: 8,
  limitLeaseMs: 6_000,
};

const DEFAULT_MAINTENANCE: MaintenanceSettings = {
  intervalMs: 5_000,
  reconcileIdleMs: 60_000,
  fanInLeaseMs: 60_000,
  announceGraceMs: 30_000,
  retentionMs: null,
  vacuum: true,
};

/** How long done jobs are kept: `atMostSeconds`, or the retention when it is shorter. */
function jobsKeptSeconds(maintenance: MaintenanceSettings, atMostSeconds: number): number {
  return Math.min(atMostSeconds, Math.ceil((maintenance.retentionMs ?? atMostSeconds * 1000) / 1000));
}

/**
 * A retry (or a delete) asked for the moment its task ended waits this long at most for the
 * ending to be announced and the fan-in to be taken up (or, for a delete, to have run), looking
 * every `RETRY_POLL_MS`, then answers the conflict (the store holds them back for a minute after
 * the end at most; a delete, also while a fan-in runs).
 */
const RETRY_WAIT_MS = 10_000;
const RETRY_POLL_MS = 200;

/** How long after the handlers' grace pg-boss's stop waits for them to report. */
const STOP_MARGIN_MS = 5_000;

/** The child queue's done jobs: an hour. A done manager job: pg-boss's week. (Or the retention.) */
const CHILD_JOBS_KEPT_SECONDS = 3600;
const MANAGER_JOBS_KEPT_SECONDS = 7 * 24 * 3600;

function checkSettings(worker: WorkerSettings, maintenance: MaintenanceSettings, scheduling: SchedulingSettings): void {
  const ints: Array<[string, number, number]> = [
    ['worker.concurrency', worker.concurrency, 1],
    ['worker.batchSize', worker.batchSize, 1],
    ['worker.leaseMs', worker.leaseMs, 1000],
    ['worker.controlPollMs', worker.controlPollMs, 10],
    ['worker.managerConcurrency', worker.managerConcurrency, 1],
    ['worker.limitLeaseMs', worker.limitLeaseMs, 300],
    ['maintenance.intervalMs', maintenance.intervalMs, 10],
    ['maintenance.reconcileIdleMs', maintenance.reconcileIdleMs, 0],
    ['maintenance.fanInLeaseMs', maintenance.fanInLeaseMs, 1000],
    ['maintenance.announceGraceMs', maintenance.announceGraceMs, 0],
    ...(maintenance.retentionMs === null ? [] : ([['maintenance.retentionMs', maintenance.retentionMs, 60_000]] as Array<[string, number, number]>)),
    ['scheduling.window', scheduling.window, 1],
    ...(scheduling.maxInFlightPerTenant === null ? [] : ([['scheduling.maxInFlightPerTenant', scheduling.maxInFlightPerTenant, 1]] as Array<[string, number, number]>)),
    ...(scheduling.maxRunningTasksPerTenant === null ? [] : ([['scheduling.maxRunningTasksPerTenant', scheduling.maxRunningTasksPerTenant, 1]] as Array<[string, number, number]>)),
  ];
  for (const [field, value, min] of ints) {
    if (!Number.isInteger(value) || value < min) {
      throw new FanoutError('invalid_argument', `${field}: must be an integer >= ${min}, got ${value}`, { field });
    }
  }
  // Leases are renewed every controlPollMs: at a third of the lease or more, one slow renewal lets
  // a live worker's claims lapse, and its items run twice.
  if (worker.controlPollMs * 3 > worker.leaseMs) {
    throw new FanoutError('invalid_argument', `worker.controlPollMs: must be at most a third of worker.leaseMs (${Math.floor(worker.leaseMs / 3)}), got ${worker.controlPollMs}`, {
      field: 'worker.controlPollMs',
    });
  }
  for (const [tenant, weight] of Object.entries(scheduling.tenantWeights)) {
    if (!(typeof weight === 'number' && weight > 0 && weight <= 100)) {
      throw new FanoutError('invalid_argument', `scheduling.tenantWeights.${tenant}: must be a number above 0 and at most 100, got ${weight}`, { field: `scheduling.tenantWeights.${tenant}` });
    }
  }
  if (!(worker.pollingIntervalSeconds >= 0.5)) {
    throw new FanoutError('invalid_argument', 'worker.pollingIntervalSeconds: must be >= 0.5', { field: 'worker.pollingIntervalSeconds' });
  }
}

/**
 * A Fanout runtime: submits tasks, and (once started) works their manager and child jobs in
 * this process. Run one per process; API processes can start it with
 * `{ managers: false, children: false, maintenance: false }` to only submit and control tasks.
 */
export class Fanout implements AsyncDisposable {
  readonly events: FanoutEvents;
  readonly store: FanoutStore;
  readonly logger: Logger;
  readonly #boss: PgBoss;
  readonly #ownsBoss: boolean;
  /** pg-boss's schema when this runtime made the PgBoss (see `#windowWaiting`). */
  readonly #bossSchema: string | null;
  /** The table each child queue's jobs are in, once read (see `#jobTable`). */
  readonly #jobTables = new Map<string, Promise<string>>();
  readonly #definitions = new Map<string, AnyFanoutDefinition>();
  readonly #worker: WorkerSettings;
  readonly #maintenance: MaintenanceSettings;
  readonly #scheduling: SchedulingSettings;
  readonly #shutdown = new AbortController();
  readonly #ctx: RuntimeContext;
  #children: ChildRunner | null = null;
  #maintenanceTimer: NodeJS.Timeout | null = null;
  /** The maintenance pass in progress, awaited by `stop()`. */
  #maintenancePassRunning: Promise<void> | null = null;
  readonly #workedQueues: string[] = [];
  readonly #limits = new Map<string, GlobalLimit | RateLimit>();
  /** What this process did (items, waits, recoveries), for its presence reports. */
  readonly stats = new RuntimeStats();
  /** Traces and metrics (OpenTelemetry API; see `FanoutRuntimeOptions.telemetry`). */
  readonly telemetry: FanoutTelemetry;
  readonly #itemLogs: ItemLogBuffer;
  /** Group-committed writes of the endings this process announces and the fan-ins it runs. */
  readonly #endings: Endings;
  #presence: Presence | null = null;
  /** This process works jobs or runs the maintenance loop (an API process does neither). */
  #runsJobs = false;
  #state: 'new' | 'starting' | 'started' | 'stopping' | 'stopped' = 'new';

  constructor(options: FanoutRuntimeOptions) {
    this.store = options.store;
    // Masked whatever logger it is: no line the runtime or a handler writes carries a credential.
    this.logger = maskedLogger(options.logger ?? consoleLogger('warn'));
    for (const definition of options.definitions) {
      if (this.#definitions.has(definition.name)) {
        throw new FanoutError('invalid_argument', `definitions: "${definition.name}" is registered twice`, { field: 'definitions' });
      }
      this.#definitions.set(definition.name, definition);
    }
    this.#worker = { ...DEFAULT_WORKER, ...options.worker };
    this.#maintenance = { ...DEFAULT_MAINTENANCE, ...options.maintenance };
    this.#scheduling = { ...DEFAULT_SCHEDULING, ...options.scheduling };
    checkSettings(this.#worker, this.#maintenance, this.#scheduling);

    this.telemetry = new FanoutTelemetry(this.stats, options.telemetry);
    // The app's own PgBoss may come from another copy of pg-boss than ours (another version, or a
    // bundler's copy): `instanceof` would miss it and build a second instance from its fields.
    const given = isPgBossInstance(options.boss) ? options.boss : null;
    this.#ownsBoss = given === null;
    // Supervision is what fails the jobs of a worker that died before claiming their items (their
    // heartbeat stops), so they are retried; pg-boss's default pass is every 60 s.
    this.#boss =
      given ??
      new PgBoss({
        useListenNotify: true,
        superviseIntervalSeconds: 15,
        monitorIntervalSeconds: 15,
        // pg-boss deletes a queue's done jobs in its maintenance pass, by default once a day: the
        // child queue's would then stay a day whatever their deleteAfterSeconds.
        maintenanceIntervalSeconds: jobsKeptSeconds(this.#maintenance, CHILD_JOBS_KEPT_SECONDS),
        ...(options.boss as ConstructorOptions),
        openTelemetry: bossTelemetry(options.telemetry, (options.boss as ConstructorOptions).openTelemetry),
      });
    if (this.#ownsBoss) this.#boss.on('error', (error) => this.#reportError(error, 'pg-boss'));
    // Only on pg-boss's own database (a pool of `pg`, which takes a named statement where a text
    // goes); a `db` given in its options is the app's, and may take text only.
    const bossDb = this.#boss.getDb() as BossDb & { _pgbdb?: unknown };
    if (this.#ownsBoss && bossDb._pgbdb === true && (options.bossPreparedStatements ?? true)) nameRecurringStatements(bossDb);
    // As pg-boss writes it in its own SQL (its constructor refused a name that is not an identifier).
    this.#bossSchema = given === null ? ((options.boss as ConstructorOptions).schema ?? 'pgboss') : null;

    this.events = new FanoutEvents((error, event) => this.logger.error('event listener failed', { event, ...errorFields(error) }));
    this.#itemLogs = new ItemLogBuffer(this.store, this.logger);
    const self = this;
    this.#ctx = {
      boss: this.#boss,
      store: this.store,
      events: this.events,
      logger: this.logger,
      settings: this.#worker,
      shutdown: this.#shutdown.signal,
      definition: (kind) => self.definition(kind),
      withEnqueuer: (call) => self.#withEnqueuer(call),
      afterSettle: (result) => self.#afterSettle(result),
      announceTask: (task, stopped) => self.#announceTask(task, stopped),
      announceEnding: (task) => self.#announceEnding(task),
      reportError: (error, context, fields) => self.#reportError(error, context, fields),
      limits: { global: (name, o) => self.globalLimit(name, o), rate: (name, o) => self.rateLimit(name, o) },
      refreshStatistics: (added) => self.#refreshStatistics(added),
      requeueOrphans: (task) => self.#requeueOrphans(task),
      managerAlive: (task) => self.#managerAlive(task),
      stats: this.stats,
      itemLogs: this.#itemLogs,
      telemetry: this.telemetry,
    };
    this.#endings = new Endings(this.#ctx, this.#maintenance.fanInLeaseMs);
  }

  /** The pg-boss instance jobs go through. */
  get boss(): PgBoss {
    return this.#boss;
  }

  definition(kind: string): AnyFanoutDefinition {
    const definition = this.#definitions.get(kind);
    if (!definition) throw new FanoutError('unknown_definition', `no fan-out definition named "${kind}" is registered`, { field: 'kind' });
    return definition;
  }

  /** Starts pg-boss (when owned), creates the queues, and starts the requested workers. */
  async start(options: StartOptions = {}): Promise<this> {
    if (this.#state !== 'new') throw new FanoutError('conflict', `runtime cannot start: it is ${this.#state}`);
    this.#state = 'starting';
    try {
      // A database without every migration fails later and far from the cause (a settle calling a
      // function that is not there): refuse to start instead, naming what is missing.
      await this.store.checkSchema?.();
    } catch (error) {
      this.#state = 'new';
      throw error;
    }
    if (this.#ownsBoss) await this.#boss.start();
    for (const definition of this.#definitions.values()) await this.#createQueues(definition);

    if (options.managers ?? true) {
      // Two fetch loops, each taking up to half of managerConcurrency jobs at a time and
      // dispatching them side by side; a full fetch is followed by the next one at once, so many
      // small tasks are dispatched back to back instead of one per poll.
      const loops = Math.min(2, this.#worker.managerConcurrency);
      const batchSize = Math.ceil(this.#worker.managerConcurrency / loops);
      for (const definition of this.#definitions.values()) {
        await this.#boss.work<ManagerJobData>(
          definition.managerQueue,
          {
            batchSize,
            localConcurrency: loops,
            includeMetadata: true,
            perJobResults: true,
            burstWhenBatchFull: batchSize > 1,
            pollingIntervalSeconds: this.#worker.pollingIntervalSeconds,
            // NOTIFY wakes workers for new jobs, but not for retries and delayed jobs coming due:
            // keep polling at the same pace for those.
            notifyPollingIntervalSeconds: this.#worker.pollingIntervalSeconds,
          } as const,
          // Each job succeeds or fails on its own (a failed manager is retried alone).
          async (jobs) =>
            Promise.all(
              jobs.map(async (job) => {
                try {
                  await this.telemetry.dispatch(definition.name, job.data, () => runManager(this.#ctx, definition, job as JobWithMetadata<ManagerJobData>));
                  return { id: job.id, status: 'completed' as const };
                } catch (error) {
                  if (this.#shutdown.signal.aborted) await this.#giveBack(definition.managerQueue, job);
                  return { id: job.id, status: 'failed' as const, output: { message: error instanceof Error ? error.message : String(error) } };
                }
              }),
            ),
        );
        this.#workedQueues.push(definition.managerQueue);
      }
    }
    if (options.children ?? true) {
      const children = (this.#children = new ChildRunner(
        this.#ctx,
        this.#scheduling,
        async (kind, jobs) => void (await this.#enqueueTickets(null, kind, jobs)),
        (kind, tenant) => this.#othersWaiting(kind, tenant),
      ));
      const boss = this.#boss;
      for (const definition of this.#definitions.values()) {
        // Two fetch loops, one job at a time each: a job takes as many items as there is room for,
        // and the loop fetches again once there is room (see ChildRunner.handleTicket). A job that
        // queues a successor wakes every loop (its insert notifies); one that had nothing to do
        // (a window job left over from a tenant whose tasks are done) wakes its own loop, which
        // would otherwise wait its poll interval before the next job: a few of those ahead of a
        // busy tenant's jobs held its items back for seconds.
        for (let loop = 0; loop < 2; loop++) {
          let loopId: string | null = null;
          loopId = await boss.work<TicketData>(
            definition.childQueue,
            {
              batchSize: 1,
              localConcurrency: 1,
              pollingIntervalSeconds: this.#worker.pollingIntervalSeconds,
              notifyPollingIntervalSeconds: this.#worker.pollingIntervalSeconds,
            },
            async ([job]) => {
              // (`notifyWorker` came with pg-boss 12.x; an older one polls as before.)
              if (!(await children.handleTicket(definition, job!)) && loopId !== null) (boss as { notifyWorker?: (id: string) => void }).notifyWorker?.(loopId);
            },
          );
        }
        this.#workedQueues.push(definition.childQueue);
      }
    }
    if (options.maintenance ?? true) {
      const schedule = () => {
        const jitter = Math.random() * this.#maintenance.intervalMs * 0.2;
        this.#maintenanceTimer = setTimeout(() => {
          // The loop does not wait for the app's hooks (fan-ins, purges): one that hangs holds up
          // its own definition's, not the next passes.
          this.#maintenancePassRunning = maintenancePass(this.#ctx, this.#maintenance, [...this.#definitions.keys()], this.#scheduling.maxRunningTasksPerTenant, { awaitHooks: false })
            .catch((error) => this.#reportError(error, 'maintenance pass'))
            .finally(() => {
              this.#maintenancePassRunning = null;
              if (this.#state === 'started') schedule();
            });
        }, this.#maintenance.intervalMs + jitter);
        this.#maintenanceTimer.unref();
      };
      schedule();
    }
    this.#runsJobs = (options.managers ?? true) || (options.children ?? true) || (options.maintenance ?? true);
    if (options.presence ?? true) {
      const works = (options.managers ?? true) || (options.children ?? true);
      this.#presence = new Presence(this.store, this.stats, {
        role: options.role ?? (works ? 'worker' : 'api'),
        kinds: [...this.#definitions.keys()],
        concurrency: options.children ?? true ? this.#worker.concurrency : 0,
        intervalMs: 5000,
        logger: this.logger,
      });
      this.#presence.start();
    }
    this.telemetry.watchTasks(this.store, [...this.#definitions.keys()]);
    this.#state = 'started';
    return this;
  }

  async #createQueues(definition: AnyFanoutDefinition): Promise<void> {
    const { manager, child } = definition.resolved;
    const deadLetter = { retentionSeconds: 14 * 24 * 3600 };
    const childQueue = {
      retryLimit: child.retryLimit,
      retryDelay: child.retryDelaySeconds,
      retryBackoff: child.retryBackoff,
      retryDelayMax: child.retryDelayMaxSeconds,
      expireInSeconds: child.expireInSeconds,
      heartbeatSeconds: child.heartbeatSeconds,
      // A done job is of no use to anyone: it claimed items, the items carry the work. Kept an
      // hour, or as long as the items when a shorter retention is set.
      deleteAfterSeconds: jobsKeptSeconds(this.#maintenance, CHILD_JOBS_KEPT_SECONDS),
      notify: true,
    };
    const managerQueue = {
      retryLimit: manager.retryLimit,
      retryDelay: manager.retryDelaySeconds,
      retryBackoff: true,
      expireInSeconds: manager.expireInSeconds,
      heartbeatSeconds: manager.heartbeatSeconds,
      // Kept no longer than the task's details: with many small tasks, a job each adds up.
      deleteAfterSeconds: jobsKeptSeconds(this.#maintenance, MANAGER_JOBS_KEPT_SECONDS),
      notify: true,
    };
    await this.#boss.createQueue(definition.deadLetterQueue, deadLetter);
    // The child queue's jobs are the scheduler's (scheduler.ts): the `short` policy keeps one
    // waiting job per singleton key (a slot of a tenant's window), and its own partition keeps
    // other queues' fetches off its rows.
    await this.#boss.createQueue(definition.childQueue, { ...childQueue, deadLetter: definition.deadLetterQueue, partition: true, policy: 'short' });
    await this.#boss.createQueue(definition.managerQueue, managerQueue);
    // createQueue leaves an existing queue as it was; bring its options up to date.
    await this.#boss.updateQueue(definition.childQueue, { ...childQueue, deadLetter: definition.deadLetterQueue });
    await this.#boss.updateQueue(definition.managerQueue, managerQueue);
    // Read now rather than in the first transaction that reads the window (a failure: at first use).
    if (this.#bossSchema !== null) await this.#jobTable(definition.childQueue).catch(() => {});
  }

  #assertStarted(): void {
    if (this.#state !== 'started') throw new FanoutError('not_started', 'the runtime is not started: call start() first');
  }

  /**
   * Creates a task and enqueues its manager in one transaction, and returns at once.
   * The input is validated against the definition's schema first.
   */
  async submit<D extends AnyFanoutDefinition>(
    definition: D | string,
    input: D extends FanoutDefinition<infer S, any, any> ? z.input<S> : unknown,
    options: SubmitOptions = {},
  ): Promise<SubmittedTask> {
    this.#assertStarted();
    const def = typeof definition === 'string' ? this.definition(definition) : this.definition(definition.name);
    const parsed = def.input.parse(input);
    const problem = storableProblem(parsed);
    if (problem) throw new FanoutError('invalid_argument', `input: ${problem}`, { field: 'input' });
    const limits = resolveLimits(
      {
        maxFailures: options.maxFailures === undefined ? def.resolved.maxFailures : options.maxFailures,
        maxFailureRatio: options.maxFailureRatio === undefined ? def.resolved.maxFailureRatio : options.maxFailureRatio,
        deadlineMs: options.deadlineMs === undefined ? def.resolved.deadlineMs : options.deadlineMs,
      },
      '',
    );
    const priority = options.priority ?? 0;
    if (!Number.isInteger(priority) || priority < -100 || priority > 100) {
      throw new FanoutError('invalid_argument', `priority: must be an integer from -100 to 100, got ${priority}`, { field: 'priority' });
    }
    const key = options.idempotencyKey ?? null;
    if (key !== null && !/^[\x21-\x7e]{1,200}$/.test(key)) {
      throw new FanoutError('invalid_argument', 'idempotencyKey: must be 1-200 visible ASCII characters', { field: 'idempotencyKey' });
    }
    const tenant = options.tenant ?? null;
    // A replay answers its task (or a conflict) whatever became of what its input names.
    if (def.checkInput && !(key !== null && (await this.store.keyedTask?.(def.name, tenant, key)))) await checkInput(def, parsed, tenant);
    const id = uuidv7();
    // A small task's items are listed here and stored with it: no manager job to wait for.
    const items = def.resolved.manager.dispatchAtSubmit > 0 && this.store.createDispatchedTask ? await listAtSubmit(def, parsed, { id, tenant }, this.logger) : null;
    const newTask: NewTask = {
      id,
      kind: def.name,
      tenant,
      input: parsed,
      maxAttempts: def.resolved.child.retryLimit + 1,
      maxFailures: limits.maxFailures,
      maxFailureRatio: limits.maxFailureRatio,
      deadlineAt: limits.deadlineMs === null ? null : new Date(Date.now() + limits.deadlineMs),
      summary: await summaryOf(def, parsed, tenant, this.logger),
      idempotencyKey: key,
      priority,
      // What the key stands for: the same key with other input or options is another request.
      requestHash: key === null ? null : createHash('sha256').update(JSON.stringify(priority === 0 ? [parsed, limits] : [parsed, limits, priority])).digest('hex'),
    };
    if (items) return this.#submitDispatched(def, newTask, items);
    const task = await this.telemetry.submit(def.name, tenant, () => this.store.createTask(
      newTask,
      async (tx, task) => {
        const data: ManagerJobData = { taskId: task.id, ...this.telemetry.jobFields() };
        assertJobPayload(def.managerQueue, data);
        // The manager job's id is the task's id: a repeated send cannot create a second manager.
        await this.#boss.insert(def.managerQueue, [{ id: task.id, data, singletonKey: `manager-${task.id}` }], { db: tx });
      },
    ));
    if (!task.replayed) this.events.emit('task.submitted', { ...taskCountsOf(task), at: Date.now() });
    return task;
  }

  /** Stores a task with the items listed at submit, dispatched (see `options.manager.dispatchAtSubmit`). */
  async #submitDispatched(def: AnyFanoutDefinition, newTask: NewTask, items: NewItem[]): Promise<SubmittedTask> {
    const store = this.store as Required<Pick<FanoutStore, 'createDispatchedTask'>>;
    const dispatch: { settled: SettledTask | null } = { settled: null };
    const task = await this.telemetry.submit(def.name, newTask.tenant ?? null, async () => {
      // The items' spans continue the submit's trace, as they continue a manager's dispatch.
      const trace = this.telemetry.jobFields().trace ?? null;
      const created = await this.telemetry.page(newTask as Pick<TaskRecord, 'kind' | 'tenant'>, 1, items, async () => {
        // The task and its items go in by themselves, in one statement (no transaction around
        // it), and the tenant's window is looked at once the statement committed, as after any
        // commit whose window the queue skipped: a busy tenant's window is all waiting, and an
        // idle one's jobs then go in one round trip later. Reading the window before the insert
        // as well (to insert its jobs with the items) cost every submit a round trip, and with many
        // small tasks submitted at once, the submits' round trips were what held them back.
        const alone = this.store.createDispatchedTaskAlone?.bind(this.store);
        if (!alone) return this.#withEnqueuer((enqueue) => store.createDispatchedTask(newTask, items, enqueue, trace));
        const stored = await alone(newTask, items, trace);
        if (stored.inserted > (stored.settled?.failed ?? 0)) await this.#topUp(def.name, windowTickets(this.#scheduling, newTask.tenant ?? null));
        return stored;
      });
      dispatch.settled = created.settled;
      return created.task;
    });
    if (task.replayed) return task;
    this.events.emit('task.submitted', { ...taskCountsOf(task), at: Date.now() });
    // As after a manager's dispatch: a task with nothing left to run ends now, and one whose
    // items failed validation past its tolerance stops.
    if (dispatch.settled) this.#afterSettle({ settled: [], tasks: [dispatch.settled] });
    return task;
  }

  getTask(taskId: string): Promise<TaskRecord | null> {
    return this.store.getTask(taskId);
  }

  listTasks(query: ListTasksQuery) {
    return this.store.listTasks(query);
  }

  listItems(taskId: string, query: ListItemsQuery) {
    return this.store.listItems(taskId, query);
  }

  /** One item of the task, or null when it has none by that id (or retention deleted it). */
  getItem(taskId: string, itemId: string): Promise<ItemRecord | null> {
    return this.store.getItem(taskId, itemId);
  }

  /**
   * Cancels a queued or running task: pending items are cancelled and counted at once, running
   * ones see their abort signal (on whichever process runs them) and settle as cancelled.
   * Throws `not_found`, or `conflict` when the task already finished.
   */
  async cancel(taskId: string): Promise<SettledTask> {
    const result = await this.store.stopTask(taskId, 'cancelled');
    if (!result) throw new FanoutError('not_found', `task ${taskId} does not exist`, { field: 'taskId' });
    if (!result.changed && isTerminalTaskStatus(result.task.status)) {
      throw new FanoutError('conflict', `task ${taskId} already ${result.task.status}; only a queued or running task can be cancelled`, { field: 'taskId' });
    }
    this.#announceTask(result.task, true);
    this.events.emit('task.progress', { ...result.task, at: Date.now() });
    return result.task;
  }

  /**
   * Re-runs the failed items of a finished task in a new round: all of them, or only those whose
   * failure is marked retryable (`retryableOnly`). Throws `not_found`, or `conflict` when the
   * task runs or has nothing to retry. The new round's deadline is `deadlineMs` from now: by
   * default the definition's (`options.deadlineMs`), as at submit; null for none.
   */
  async retryFailed(taskId: string, options: { deadlineMs?: number | null; retryableOnly?: boolean } = {}): Promise<{ retried: number; task: TaskRecord }> {
    return this.#retry(taskId, { deadlineMs: options.deadlineMs, ...(options.retryableOnly ? { retryableOnly: true } : {}) });
  }

  /** Re-runs one failed item of a finished task (whatever its failure), in a new round (its deadline as `retryFailed`'s). */
  async retryItem(taskId: string, itemId: string, options: { deadlineMs?: number | null } = {}): Promise<{ retried: number; task: TaskRecord }> {
    return this.#retry(taskId, { deadlineMs: options.deadlineMs, itemIds: [itemId] });
  }

  async #retry(taskId: string, options: { deadlineMs: number | null | undefined; itemIds?: string[]; retryableOnly?: boolean }): Promise<{ retried: number; task: TaskRecord }> {
    this.#assertStarted();
    if (options.deadlineMs !== undefined) resolveLimits({ deadlineMs: options.deadlineMs }, '');
    const finished = await this.store.getTask(taskId);
    const deadlineMs = options.deadlineMs !== undefined ? options.deadlineMs : ((finished && this.#definitions.get(finished.kind)?.resolved.deadlineMs) ?? null);
    if (finished?.purgedAt) {
      throw new FanoutError('conflict', `task ${taskId}: its items were deleted by retention or by a delete (${finished.purgedAt.toISOString()}); submit it again`, { field: 'taskId' });
    }
    const retention = this.#maintenance.retentionMs;
    if (retention !== null && finished?.completedAt && finished.completedAt.getTime() < Date.now() - (retention - retentionMargin(retention))) {
      throw new FanoutError('conflict', `task ${taskId}: it finished too long ago to be retried (its items are about to be deleted by retention); submit it again`, { field: 'taskId' });
    }
    const once = (trace: Record<string, string> | null) =>
      this.#withEnqueuer((enqueue) =>
        this.store.retryFailed(taskId, enqueue, {
          ...(deadlineMs === null ? {} : { deadlineAt: new Date(Date.now() + deadlineMs) }),
          ...(options.itemIds ? { itemIds: options.itemIds } : {}),
          ...(options.retryableOnly ? { retryableOnly: true } : {}),
          ...(trace ? { trace } : {}),
        }),
      );
    // A task that has just ended is retried once its ending was announced and its fan-in taken up
    // (the store refuses until then, for a minute after the end at most, so that neither is lost to
    // the new round): a retry asked for the moment the task ended waits for them, for up to
    // `RETRY_WAIT_MS`.
    const retry = (trace: Record<string, string> | null) => this.#whenItPasses(() => once(trace));
    const result = finished ? await this.telemetry.retryFailed(finished.kind, taskId, retry) : await retry(null);
    this.events.emit('task.progress', { ...taskCountsOf(result.task), at: Date.now() });
    return result;
  }

  /** Queues, processes, limits, throughput and recoveries of this runtime's definitions (see `OperationsSnapshot`). */
  operations(): Promise<OperationsSnapshot> {
    return operationsSnapshot(this.store, this.#boss, [...this.#definitions.values()], undefined, () => this.telemetry.taskAttention());
  }

  /** Hides a finished task from default lists. Throws `not_found`, or `conflict` while it runs. */
  archive(taskId: string): Promise<TaskRecord> {
    return this.store.archiveTask(taskId);
  }

  /**
   * Deletes a finished task with its items and logs. Throws `not_found`, or `conflict` while it
   * runs. A task that has just ended is deleted once its ending was announced and its fan-in ran
   * (waited for up to `RETRY_WAIT_MS`, then a `conflict` with `retryAfterMs`). When its definition (registered in this process) has a purge hook (`onPurge`), the task
   * is first marked purged (never retried from then on) and held while the hook deletes the app's
   * rows, then the task goes; a hook that fails fails the delete, and leaves the task marked (a
   * delete asked again runs the hook again; so does retention, when set, which then ends its purge
   * and keeps its row).
   */
  async deleteTask(taskId: string): Promise<void> {
    const task = await this.store.getTask(taskId);
    const definition = task ? this.#definitions.get(task.kind) : undefined;
    if (task && definition?.onPurge) {
      const context = (signal: AbortSignal) => ({ logger: childLogger(this.logger, taskFields(task)), signal });
      if (this.store.markPurged) {
        const lease = { token: randomUUID(), ms: this.#maintenance.fanInLeaseMs };
        await this.#whenItPasses(() => this.store.markPurged!(taskId, lease));
        try {
          await withPurgeLease(this.#ctx, [taskId], lease, (signal) => definition.onPurge!([taskId], context(signal)));
        } catch (error) {
          // Let it go at once: a delete asked again, or retention, takes it up.
          await this.store.holdPurge?.([taskId], lease.token, 0).catch(() => {});
          throw error;
        }
      } else {
        await definition.onPurge([taskId], context(this.#shutdown.signal));
      }
    }
    await this.#whenItPasses(() => this.store.deleteTask(taskId));
  }

  /**
   * Runs `once`, and again while the store refuses it with a conflict that passes (`retryAfterMs`:
   * a task that has just ended, its ending or fan-in still to come), looking every `RETRY_POLL_MS`
   * for up to `RETRY_WAIT_MS`; then answers the refusal.
   */
  async #whenItPasses<T>(once: () => Promise<T>): Promise<T> {
    const until = performance.now() + RETRY_WAIT_MS;
    for (;;) {
      try {
        return await once();
      } catch (error) {
        if (!(error instanceof FanoutError && error.retryAfterMs !== undefined) || performance.now() >= until) throw error;
        await abortableDelay(Math.min(RETRY_POLL_MS, until - performance.now()), this.#shutdown.signal).catch(() => {
          throw error;
        });
      }
    }
  }

  /**
   * Recomputes a task's counters from its item rows and finishes it if every item is settled. The
   * failure tolerance applies to the counters set right, as a settle's would: a task they put past
   * it is stopped (its pending items cancelled) and fails.
   */
  async reconcile(taskId: string): Promise<ReconcileResult> {
    const result = await this.store.reconcile(taskId);
    if (!result) throw new FanoutError('not_found', `task ${taskId} does not exist`, { field: 'taskId' });
    if (result.finished) this.#announceTask({ ...result.task, finished: true, overFailureLimit: false });
    if (result.task.status === 'stopping' && result.task.stopReason === 'failure_threshold') {
      const stopped = await this.store.stopTask(taskId, 'failure_threshold', FAILURE_THRESHOLD_ERROR);
      if (stopped) {
        this.#announceTask(stopped.task, stopped.changed);
        return { ...result, finished: stopped.task.finished, task: stopped.task };
      }
    }
    return result;
  }

  /**
   * Runs one maintenance pass now, and resolves once the fan-ins and purges it started have run:
   * the maintenance loop (started with `maintenance: true`) runs the same every
   * `maintenance.intervalMs`, without waiting for those. A definition's fan-ins (or purges) still
   * running from an earlier pass of this process are waited for, then run again.
   */
  async runMaintenance(): Promise<void> {
    await maintenancePass(this.#ctx, this.#maintenance, [...this.#definitions.keys()], this.#scheduling.maxRunningTasksPerTenant);
  }

  /**
   * A strict concurrency limit shared by every process on this database. The same name and
   * options give the same object, so handlers may call this per item.
   */
  globalLimit(name: string, given: GlobalLimitOptions): GlobalLimit {
    const options = { ...given, leaseMs: given.leaseMs ?? this.#worker.limitLeaseMs };
    const key = `global:${name}:${options.limit}:${options.leaseMs}:${options.maxPollMs ?? ''}`;
    let limit = this.#limits.get(key) as GlobalLimit | undefined;
    if (!limit) {
      const onLost = options.onLost ?? ((lost: string) => this.logger.warn('a global limit slot lapsed while held; the limit may be exceeded until the call ends', { limit: lost }));
      const observer = this.telemetry.limitObserver(this.stats.limitObserver(name, 'global', options.limit), name, 'global');
      this.#limits.set(key, (limit = new GlobalLimit(this.store, name, { ...options, onLost }, observer)));
    }
    return limit;
  }

  /** A strict rate limit (calls per interval) shared by every process on this database. */
  rateLimit(name: string, options: RateLimitOptions): RateLimit {
    const key = `rate:${name}:${options.limit}:${options.intervalMs}`;
    let limit = this.#limits.get(key) as RateLimit | undefined;
    if (!limit) {
      const observer = this.telemetry.limitObserver(this.stats.limitObserver(name, 'rate', options.limit), name, 'rate');
      this.#limits.set(key, (limit = new RateLimit(this.store, name, options, observer)));
    }
    return limit;
  }

  /**
   * Stops working: no new jobs are fetched, running handlers are given `graceMs` to finish and
   * settle, then aborted (their items are taken over by other processes after the lease).
   */
  async stop(options: { graceMs?: number } = {}): Promise<void> {
    if (this.#state === 'stopped' || this.#state === 'stopping') return;
    this.#state = 'stopping';
    if (this.#maintenanceTimer) clearTimeout(this.#maintenanceTimer);
    const graceMs = options.graceMs ?? 10_000;
    const deadline = Date.now() + graceMs + STOP_MARGIN_MS;
    const abortTimer = setTimeout(() => this.#shutdown.abort(new FanoutError('aborted', 'runtime stopping')), graceMs);
    try {
      if (this.#ownsBoss) {
        // pg-boss fails the jobs still active when its own timeout passes: a moment after the
        // handlers' grace, so that they report first (a manager stopped by the shutdown gives its
        // job back, `#giveBack`; items aborted go back without using up an attempt).
        await this.#boss.stop({ graceful: true, timeout: graceMs + STOP_MARGIN_MS });
      } else {
        for (const queue of this.#workedQueues) await this.#boss.offWork(queue, { wait: true });
      }
      await this.#maintenancePassRunning;
      // The hooks' signals abort after the grace; one that ignores it is not waited for past the
      // grace and the margin from the stop's start (its lease lapses, and another process runs it again).
      let hooksTimer: NodeJS.Timeout | undefined;
      await Promise.race([maintenanceHooksIdle(this.#ctx), new Promise<void>((resolve) => (hooksTimer = setTimeout(resolve, Math.max(0, deadline - Date.now()))))]);
      clearTimeout(hooksTimer);
      await this.#children?.drain();
      await this.#endings.idle();
      await this.#itemLogs.drain();
      await this.#presence?.stop();
    } finally {
      clearTimeout(abortTimer);
      this.#shutdown.abort(new FanoutError('aborted', 'runtime stopped'));
      this.#state = 'stopped';
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /**
   * Gives the tenants of `work` the jobs that take its items (scheduler.ts), in the store's
   * transaction, and tops up after the commit what it could not. A window slot whose job is
   * already waiting is skipped by the queue (and a window whose jobs all wait is not sent at all,
   * `#windowWaiting`): that job will take the items. Unless it is fetched in
   * the moment before this transaction commits: its claim does not see the items yet, finds
   * nothing, and ends its chain, and with every slot of the tenant so, the items would wait for
   * the maintenance loop's check of quiet tasks (a minute). So when none of a window's jobs could
   * be inserted, they are asked for again once the transaction committed: a job still waiting then
   * sees the items, and a slot taken meanwhile gets a new one. (Jobs inserted in the transaction
   * become visible with the items: no such gap.)
   */
  #enqueuer(): { enqueue: EnqueueWork; committed(): Promise<void> } {
    const later: Array<[string, TicketJob[]]> = [];
    return {
      enqueue: async (tx, work) => {
        for (const [kind, jobs] of ticketsFor(this.#scheduling, work)) {
          // The window's jobs are counted apart from the jobs of retries coming due (mixed only in
          // a release of items with and without a delay).
          const window = jobs.filter((job) => job.startAfter === undefined);
          const due = jobs.filter((job) => job.startAfter !== undefined);
          if (due.length > 0) await this.#enqueueTickets(tx, kind, due);
          if (window.length === 0) continue;
          // A busy tenant's window is usually all waiting: the insert would skip every job.
          if ((await this.#windowWaiting(tx, kind, window)) || (await this.#enqueueTickets(tx, kind, window)) === 0) later.push([kind, window]);
        }
      },
      committed: async () => {
        for (const [kind, jobs] of later.splice(0)) await this.#topUp(kind, jobs);
      },
    };
  }

  /**
   * After a commit that made items runnable without inserting its window's jobs: inserts them
   * unless they all still wait. Best effort: a top-up that fails here is left to the maintenance
   * loop's check of quiet tasks.
   */
  async #topUp(kind: string, window: readonly TicketJob[]): Promise<void> {
    try {
      if (!(await this.#windowWaiting(null, kind, window))) await this.#enqueueTickets(null, kind, window);
    } catch (error) {
      this.#reportError(error, 'topping up the jobs of items made runnable');
    }
  }

  /**
   * Whether every job of a window waits in the queue (as its `short` policy keeps them: one
   * queued job per slot), read from the table pg-boss keeps the child queue in (`#jobTable`) in
   * one light statement instead of an insert that would skip them all. Answers false (insert
   * them) when the runtime does not know the table: an app's own PgBoss, whose schema it cannot
   * read.
   */
  async #windowWaiting(tx: SqlExecutor | null, kind: string, window: readonly TicketJob[]): Promise<boolean> {
    if (this.#bossSchema === null) return false;
    const rows = await this.#readJobTable(
      tx,
      kind,
      (table) => `SELECT count(*)::int AS waiting FROM ${table}
                  WHERE name = $1 AND state = 'created' AND policy = 'short' AND COALESCE(singleton_key, '') = ANY($2::text[])`,
      window.map((job) => job.singletonKey),
    );
    return rows[0]?.waiting === window.length;
  }

  /**
   * Whether the definition's child queue holds a job, due or being worked, that is not one of
   * `tenant`'s window jobs: another tenant's, or a retry come due. A job that claimed a full batch
   * keeps its worker while this answers false (ChildRunner.handleTicket): the tenant is alone,
   * and nobody's job waits behind it. Another tenant's job being worked counts too, since its
   * successor will want a worker soon. True (do not keep it) when the runtime cannot read the
   * queue's table (an app's own PgBoss).
   */
  async #othersWaiting(kind: string, tenant: string | null): Promise<boolean> {
    if (this.#bossSchema === null) return true;
    const rows = await this.#readJobTable(
      null,
      kind,
      (table) => `SELECT EXISTS (SELECT 1 FROM ${table}
                                 WHERE name = $1 AND state <= 'active' AND start_after <= now()
                                   AND NOT (COALESCE(singleton_key, '') = ANY($2::text[]))) AS waiting`,
      windowTickets(this.#scheduling, tenant).map((job) => job.singletonKey),
    );
    return rows[0]?.waiting !== false;
  }

  /**
   * Runs a read of the definition's child-queue table (`#jobTable`; `sql` gets its name, `$1` is
   * the queue's name and `$2` the given keys), in `tx` when given.
   */
  async #readJobTable(tx: SqlExecutor | null, kind: string, sql: (table: string) => string, keys: readonly string[]): Promise<Record<string, unknown>[]> {
    const queue = this.definition(kind).childQueue;
    const table = await this.#jobTable(queue);
    try {
      const { rows } = await (this.#jobsDb(tx) ?? this.#boss.getDb()).executeSql(sql(table), [queue, keys]);
      return rows as Record<string, unknown>[];
    } catch (error) {
      // 42P01: the table went (the queue was dropped and made again): read where it is next time.
      if ((error as { code?: unknown } | null)?.code === '42P01') this.#jobTables.delete(queue);
      throw error;
    }
  }

  /**
   * A manager its process's shutdown stopped gives its job back without using up one of the job's
   * retries: a rolling deploy during a long listing is not the manager's failure (the next attempt
   * resumes the dispatch), and three of them would otherwise end the task as `manager_failed`. The
   * job is failed as any other (back to `retry`, its next claim counted as an attempt, so pg-boss's
   * fence between attempts holds), with its retry limit one higher: the attempts a manager may fail
   * stay what they were. Fenced on the attempt this process holds: a job pg-boss already took back
   * (expired) is left alone. With an app's own PgBoss, whose schema the runtime cannot read, the
   * retry is used up.
   */
  async #giveBack(queue: string, job: { id: string; retryCount: number }): Promise<void> {
    if (this.#bossSchema === null) return;
    try {
      const table = await this.#jobTable(queue);
      await this.#boss
        .getDb()
        .executeSql(`UPDATE ${table} SET retry_limit = retry_limit + 1 WHERE name = $1 AND id = $2 AND state = 'active' AND retry_count = $3`, [queue, job.id, job.retryCount]);
    } catch (error) {
      this.#reportError(error, `giving back manager job ${job.id} on shutdown (it counts as a retry)`);
    }
  }

  /**
   * The table pg-boss keeps a queue's jobs in (`queue.table_name`: the queue's own partition, or
   * the table it shares), read once. A prepared statement on the partitioned parent is planned
   * again at every run (its generic plan covers every queue's partition, so PostgreSQL never
   * prefers it), and that planning cost ten times the read itself; on the queue's own table the
   * generic plan is as good and is kept. Until the queue exists, the parent is read.
   */
  #jobTable(queue: string): Promise<string> {
    const schema = this.#bossSchema!;
    let table = this.#jobTables.get(queue);
    if (table === undefined) {
      table = this.#boss
        .getDb()
        .executeSql(`SELECT table_name FROM ${schema}.queue WHERE name = $1`, [queue])
        .then(({ rows }) => {
          const name = (rows[0] as { table_name?: unknown } | undefined)?.table_name;
          if (typeof name === 'string') return `${schema}."${name.replaceAll('"', '""')}"`;
          this.#jobTables.delete(queue);
          return `${schema}.job`;
        });
      table.catch(() => this.#jobTables.delete(queue));
      this.#jobTables.set(queue, table);
    }
    return table;
  }

  /**
   * Runs a store call with an enqueuer (`#enqueuer`), then its top-ups once the call committed.
   */
  async #withEnqueuer<T>(call: (enqueue: EnqueueWork) => Promise<T>): Promise<T> {
    const enqueuer = this.#enqueuer();
    const result = await call(enqueuer.enqueue);
    await enqueuer.committed();
    return result;
  }

  /**
   * Inserts child-queue jobs (a slot already waiting is skipped by the queue), in `tx` when given;
   * answers how many were inserted.
   */
  async #enqueueTickets(tx: SqlExecutor | null, kind: string, jobs: readonly TicketJob[]): Promise<number> {
    const definition = this.definition(kind);
    for (const job of jobs) assertJobPayload(definition.childQueue, job.data);
    const db = this.#jobsDb(tx);
    const ids = await this.#boss.insert(definition.childQueue, jobs as TicketJob[], { returnId: true, ...(db ? { db } : {}) });
    return ids?.length ?? 0;
  }

  /** Where the child queue's statements go: the store's transaction, else the store's pool (null: pg-boss's own). */
  #jobsDb(tx: SqlExecutor | null): SqlExecutor | null {
    return tx ?? this.store.sqlExecutor?.() ?? null;
  }

  #afterSettle(result: SettleResult): void {
    for (const task of result.tasks) {
      this.events.emit('task.progress', { ...taskCountsOf(task), at: Date.now() });
      this.#announceTask(task);
      // The statement that passed the tolerance already made the task `stopping`; the stop
      // itself cancels (and counts) what is still pending. Idempotent, so later batches may repeat it.
      if (task.overFailureLimit && task.status === 'stopping' && task.stopReason === 'failure_threshold') {
        this.store
          .stopTask(task.id, 'failure_threshold', FAILURE_THRESHOLD_ERROR)
          .then((stopped) => {
            if (!stopped) return;
            this.events.emit('task.progress', { ...taskCountsOf(stopped.task), at: Date.now() });
            // (Every settle batch of the stopping task comes here: the cap's top-up only where there is one.)
            this.#announceTask(stopped.task, this.#scheduling.maxRunningTasksPerTenant !== null);
          })
          .catch((error) => this.#reportError(error, `stopping task ${task.id} past its failure tolerance`, taskFields(task)));
      }
    }
  }

  /**
   * Announces the ending of a task this process finished, and runs its fan-in. `stopped`: a stop
   * (a cancel, its deadline, its failure tolerance, its manager's failure) just took it out of
   * `running`, whether or not it ended.
   */
  #announceTask(task: SettledTask, stopped = false): void {
    // With a cap on a tenant's running tasks, its next waiting task may run once this one ended or
    // stopped (a stopping task's items still running do not hold the cap): its jobs' chains ended
    // when they found nothing to claim, so the tenant's window is topped up for it. A stop does it
    // whatever this process's own settings: a cancel comes through an API process, and the cap is
    // the workers'.
    const capped = this.#scheduling.maxRunningTasksPerTenant !== null;
    if (((task.finished && capped) || stopped) && this.#definitions.has(task.kind) && this.#state === 'started') {
      void this.#topUp(task.kind, windowTickets(this.#scheduling, task.tenant));
    }
    if (!task.finished) return;
    this.telemetry.taskFinished(task);
    void this.#announceEnding(task);
    // The fan-in runs where jobs run: an API process that ended a task (a cancel) leaves it to them.
    if (this.#definitions.has(task.kind) && this.#state === 'started' && this.#runsJobs) {
      this.#endings.fanIn(task.id, task.kind).catch((error) => this.#reportError(error, `fan-in of task ${task.id}`, taskFields(task)));
    }
  }

  /**
   * Emits a task's ending and delivers it to the durable listeners (`events.onEnding`, such as a
   * broadcast); records the round as announced once they took it. If the process dies first or a
   * listener fails, the maintenance loop announces it again.
   */
  async #announceEnding(task: TaskCounts): Promise<void> {
    const type = task.status === 'completed' ? 'task.completed' : task.status === 'failed' ? 'task.failed' : task.status === 'cancelled' ? 'task.cancelled' : null;
    if (!type) return;
    try {
      await this.events.deliverEnding(type, { ...taskCountsOf(task), at: Date.now() });
      await this.#endings.markAnnounced(task.id, task.round);
    } catch (error) {
      this.#reportError(error, `announcing the ending of task ${task.id} (it will be announced again)`, taskFields(task));
    }
  }

  async #managerAlive(task: TaskCounts): Promise<boolean> {
    if (!this.#definitions.has(task.kind)) return true; // not ours to judge
    // The manager job's id is the task's id.
    const [job] = await this.#boss.findJobs(this.definition(task.kind).managerQueue, { id: task.id, limit: 1 });
    return job !== undefined && (job.state === 'created' || job.state === 'retry' || job.state === 'active');
  }

  async #requeueOrphans(task: TaskCounts): Promise<boolean> {
    if (!this.#definitions.has(task.kind)) return false;
    const pending = await this.store.pendingWork(task.id);
    const jobs: TicketJob[] = [];
    // Topping up is harmless when the tenant's jobs are there (a waiting slot is not inserted
    // twice); without it, a job lost with a crashed worker would strand the items.
    if (pending.now) jobs.push(...windowTickets(this.#scheduling, task.tenant));
    if (pending.nextRetryAt) jobs.push(dueTicket(task.tenant, pending.nextRetryAt.getTime()));
    if (jobs.length === 0) return false;
    await this.#enqueueTickets(null, task.kind, jobs);
    if (pending.now) this.logger.info('a quiet running task has items to run; topped up its tenant\'s jobs', taskFields(task));
    return pending.now;
  }

  async #refreshStatistics(added: number): Promise<void> {
    try {
      await this.store.refreshStatistics?.(added);
    } catch (error) {
      // Statistics are an optimisation: without the right (ownership), autovacuum gets there later.
      this.logger.debug('could not refresh the item statistics', errorFields(error));
    }
  }

  #reportError(error: unknown, context: string, fields: Record<string, unknown> = {}): void {
    this.logger.error(`${context} failed`, { ...errorFields(error), ...fields });
    this.events.emit('error', { error, context });
  }
}

/** The definition's `checkInput`: its problems, if any, thrown as one `invalid_argument` naming them. */
async function checkInput(definition: AnyFanoutDefinition, input: unknown, tenant: string | null): Promise<void> {
  const found = (await definition.checkInput!(input, { tenant })) ?? [];
  if (!Array.isArray(found)) throw new TypeError(`definition ${definition.name}: checkInput must return an array of issues ({ field, rule, message }) or nothing`);
  if (found.length === 0) return;
  const issues = found.map((issue) => ({ field: issue.field === '' ? 'input' : `input.${issue.field}`, rule: issue.rule, message: issue.message }));
  const first = issues[0]!;
  throw new FanoutError('invalid_argument', `${first.field}: ${first.message}`, { field: first.field, issues });
}

/** The definition's summary of an input, cut to 200 characters; a failing `summarize` is logged, not thrown. */
async function summaryOf(definition: AnyFanoutDefinition, input: unknown, tenant: string | null, logger: Logger): Promise<string | null> {
  if (!definition.summarize) return null;
  try {
    const text = String(await definition.summarize(input, { tenant })).trim();
    return text.length > 200 ? `${text.slice(0, 199)}…` : text || null;
  } catch (error) {
    logger.warn('summarize failed; the task has no summary', { definition: definition.name, ...errorFields(error) });
    return null;
  }
}

/**
 * pg-boss's own OpenTelemetry options for a pg-boss the runtime creates: the runtime's providers.
 * Its trace context on jobs (`propagateContext`) stays off: Fanout's jobs carry the context in
 * their data already (the `trace` field), and storing it twice costs every job row.
 */
function bossTelemetry(telemetry: TelemetryOptions | undefined, given: ConstructorOptions['openTelemetry']): ConstructorOptions['openTelemetry'] {
  return {
    ...(telemetry?.tracerProvider ? { tracerProvider: telemetry.tracerProvider } : {}),
    ...(telemetry?.meterProvider ? { meterProvider: telemetry.meterProvider } : {}),
    ...(telemetry?.propagator ? { propagator: telemetry.propagator } : {}),
    ...given,
  };
}

/** Creates a runtime. Call `start()` on it. */
export function createFanout(options: FanoutRuntimeOptions): Fanout {
  return new Fanout(options);
}
