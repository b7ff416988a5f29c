// The scheduler: how items reach workers fairly.
//
// Items are not given a job each. A task's items wait as rows, and each tenant of a definition
// keeps a few jobs in the child queue, its "window" (`scheduling.window`, times the tenant's
// weight). A job ("ticket") taken by a worker claims the next items of one of the tenant's
// running tasks, as many as the worker has room for (at most `worker.batchSize`), and queues
// its successor in the same slot of the window before it runs them. Each successor serves the
// tenant's next task (round robin by task id, higher priority first), so:
// - tenants take turns: the queue holds a few jobs per tenant, first in first out, whatever the
//   number of items each has waiting, so a small task behind a large one waits for a few jobs,
//   not for the large task's items;
// - tasks of one tenant take turns too, and a task's latency does not depend on the others' size;
// - the queue moves few, large jobs (the attempt count, lease and outcome live on the item row).
//
// A slot's job is unique while it waits (the queue's `short` policy on its singleton key), so
// topping a window up is idempotent: whatever may have made items runnable (a dispatched page, a
// release, a recovered claim, a retry) tops up the window of its task's tenant, and a chain that
// finds nothing to claim simply ends. A retry that must wait gets a job of its own, due when it
// is due (one per tenant and second). The maintenance loop tops up the window of a quiet running
// task that still has pending items, so a job lost with a crashed worker cannot strand them.
import type { SqlExecutor, WorkToEnqueue } from '../store/types.ts';

export interface SchedulingSettings {
  /**
   * Jobs each tenant keeps queued per definition: its share of the workers when they are all
   * busy. Small keeps a newcomer's wait short; it must exceed the fetch loops that take jobs
   * at once for one tenant to use every worker alone. @default 4
   */
  window: number;
  /** A tenant's share relative to the others (its window is `window` times this). @default 1 each */
  tenantWeights: Readonly<Record<string, number>>;
  /**
   * Items of one definition and tenant running at once, at most, across every process (null:
   * no quota). A tenant at its quota waits; the others go on. @default null
   */
  maxInFlightPerTenant: number | null;
  /**
   * Running tasks of one definition and tenant served at once (by priority, then age); the
   * others wait until one ends. null: all of them, in turn. @default null
   */
  maxRunningTasksPerTenant: number | null;
}

export const DEFAULT_SCHEDULING: SchedulingSettings = {
  window: 4,
  tenantWeights: {},
  maxInFlightPerTenant: null,
  maxRunningTasksPerTenant: null,
};

/** A child job: it serves a tenant (slot `slot` of its window, or -1 for a retry coming due). */
export interface TicketData {
  tenant: string | null;
  slot: number;
  /** The task the previous job of this slot served: this one serves the next. */
  after?: string;
}

export interface TicketJob {
  data: TicketData;
  singletonKey: string;
  startAfter?: Date;
  /** Fetched before the jobs of lower priority (pg-boss's; successors have none: 0). */
  priority?: number;
}

/**
 * A window's jobs go ahead of the successors in the queue: a tenant that had nothing queued (a
 * new task, work come due) is served at the next fetch instead of after the jobs every busy
 * tenant keeps queued, and its successors then take turns with theirs.
 */
const WINDOW_PRIORITY = 1;

/** The window of a tenant: `window` times its weight, at least 1. */
export function windowOf(settings: SchedulingSettings, tenant: string | null): number {
  // Own properties only: a tenant named `constructor` or `toString` has no weight of its own.
  const weight = tenant !== null && Object.hasOwn(settings.tenantWeights, tenant) ? settings.tenantWeights[tenant]! : 1;
  return Math.max(1, Math.round(settings.window * weight));
}

// The key of a slot's job. The tenant goes last, so no tenant name can make two keys collide.
const slotKey = (slot: number | string, tenant: string | null) => `${slot}:${tenant ?? ''}`;

/** Every slot of a tenant's window (the ones already waiting are skipped by the queue). */
export function windowTickets(settings: SchedulingSettings, tenant: string | null): TicketJob[] {
  return Array.from({ length: windowOf(settings, tenant) }, (_, slot) => ({ data: { tenant, slot }, singletonKey: slotKey(slot, tenant), priority: WINDOW_PRIORITY }));
}

/** The job that takes over a slot after one of its jobs claimed items. */
export function successorTicket(previous: TicketData, servedTask: string | null, startAfter?: Date): TicketJob {
  return {
    data: { tenant: previous.tenant, slot: previous.slot, ...(servedTask ? { after: servedTask } : {}) },
    singletonKey: slotKey(previous.slot, previous.tenant),
    ...(startAfter ? { startAfter } : {}),
  };
}

/** A job for retries coming due at `dueAt` (one per tenant and second). */
export function dueTicket(tenant: string | null, dueAt: number): TicketJob {
  const second = Math.ceil(dueAt / 1000);
  return { data: { tenant, slot: -1 }, singletonKey: slotKey(`r${second}`, tenant), startAfter: new Date(second * 1000) };
}

/** The jobs that serve `work`, by kind: each tenant's window, and a job per retry second. */
export function ticketsFor(settings: SchedulingSettings, work: readonly WorkToEnqueue[], now = Date.now()): Map<string, TicketJob[]> {
  const byKind = new Map<string, Map<string, TicketJob>>();
  for (const w of work) {
    let jobs = byKind.get(w.kind);
    if (!jobs) byKind.set(w.kind, (jobs = new Map()));
    // A retry's job is due when its items are: by the database's clock when the store says (a
    // process whose clock is behind would have it fetched early, find nothing and end its chain).
    const tickets = w.delayMs && w.delayMs > 0 ? [dueTicket(w.tenant, w.dueAt ?? now + w.delayMs)] : windowTickets(settings, w.tenant);
    for (const ticket of tickets) jobs.set(ticket.singletonKey, ticket);
  }
  return new Map([...byKind].map(([kind, jobs]) => [kind, [...jobs.values()]]));
}

export type EnqueueTickets = (tx: SqlExecutor | null, kind: string, jobs: readonly TicketJob[]) => Promise<void>;
