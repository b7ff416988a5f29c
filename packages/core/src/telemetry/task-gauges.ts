import type { Attributes } from '@opentelemetry/api';
import type { FanoutStore, TaskRecord } from '../store/types.ts';
import { ATTR, METRIC } from './names.ts';

/** Tasks an operator should look at, as the task gauges saw them. */
export interface TaskAttention {
  /** Unfinished tasks by status. */
  active: { queued: number; running: number; stopping: number };
  overdue: { id: string; kind: string; tenant: string | null; deadlineAt: Date }[];
  /** Running tasks whose settled count has not moved for the stall threshold (`quietMs` so far, as this process saw it). */
  stalled: { id: string; kind: string; tenant: string | null; settled: number; total: number; quietMs: number }[];
}

/** Running tasks read per page; every running task is read, page by page. */
const PAGE = 500;

/**
 * Task-level gauges read from the database when a metric reader collects: unfinished tasks by
 * status, running tasks past their deadline, and running (or stopping) tasks whose settled count
 * has not moved for `stalledAfterMs`. A task's progress is remembered between collections, so a
 * process sees a stall once it has watched the task for that long (a fresh process needs as long).
 */
export class TaskGauges {
  readonly #store: FanoutStore;
  readonly #kinds: readonly string[];
  readonly #stalledAfterMs: number;
  readonly #progress = new Map<string, { settled: number; since: number }>();

  constructor(store: FanoutStore, kinds: readonly string[], stalledAfterMs: number) {
    this.#store = store;
    this.#kinds = kinds;
    this.#stalledAfterMs = stalledAfterMs;
  }

  /**
   * Reads the gauges (and remembers progress). Returns the tasks that need a look: running past
   * their deadline, or stalled (with how long their count has not moved).
   */
  async read(observe: (instrument: string, value: number, attributes: Attributes) => void = () => {}): Promise<TaskAttention> {
    const attention: TaskAttention = { active: { queued: 0, running: 0, stopping: 0 }, overdue: [], stalled: [] };
    const now = Date.now();
    const seen = new Set<string>();
    for (const kind of this.#kinds) {
      const definition = { [ATTR.definition]: kind };
      const [summary, running] = await Promise.all([this.#store.taskSummary({ kind, statuses: ['queued', 'running', 'stopping'] }), this.#running(kind)]);
      for (const status of ['queued', 'running', 'stopping'] as const) {
        observe(METRIC.tasksActive, summary.byStatus[status], { ...definition, [ATTR.taskStatus]: status });
        attention.active[status] += summary.byStatus[status];
      }
      let overdue = 0;
      let stalled = 0;
      for (const task of running) {
        seen.add(task.id);
        if (task.status === 'running' && task.deadlineAt && task.deadlineAt.getTime() < now) {
          overdue++;
          attention.overdue.push({ id: task.id, kind, tenant: task.tenant, deadlineAt: task.deadlineAt });
        }
        const settled = task.succeeded + task.failed + task.cancelled;
        const known = this.#progress.get(task.id);
        if (!known || known.settled !== settled) this.#progress.set(task.id, { settled, since: now });
        else if (now - known.since >= this.#stalledAfterMs) {
          stalled++;
          attention.stalled.push({ id: task.id, kind, tenant: task.tenant, settled, total: task.total, quietMs: now - known.since });
        }
      }
      observe(METRIC.tasksOverdue, overdue, definition);
      observe(METRIC.tasksStalled, stalled, definition);
    }
    for (const id of this.#progress.keys()) if (!seen.has(id)) this.#progress.delete(id);
    return attention;
  }

  /** Every running or stopping task of a definition (the oldest, likeliest overdue or stalled, included). */
  async #running(kind: string): Promise<TaskRecord[]> {
    const tasks: TaskRecord[] = [];
    let cursor: string | null = null;
    do {
      const page = await this.#store.listTasks({ kind, statuses: ['running', 'stopping'], limit: PAGE, cursor });
      tasks.push(...page.rows);
      cursor = page.nextCursor;
    } while (cursor);
    return tasks;
  }
}
