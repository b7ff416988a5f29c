import type { Attributes } from '@opentelemetry/api';
import type { FanoutStore } from '../store/types.ts';
import { ATTR, METRIC } from './names.ts';

/** Running tasks looked at per definition and collection; more are counted but not watched. */
const WATCHED = 500;

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

  async read(observe: (instrument: string, value: number, attributes: Attributes) => void): Promise<void> {
    const now = Date.now();
    const seen = new Set<string>();
    for (const kind of this.#kinds) {
      const definition = { [ATTR.definition]: kind };
      const [summary, running] = await Promise.all([
        this.#store.taskSummary({ kind }),
        this.#store.listTasks({ kind, statuses: ['running', 'stopping'], limit: WATCHED }),
      ]);
      for (const status of ['queued', 'running', 'stopping'] as const) observe(METRIC.tasksActive, summary.byStatus[status], { ...definition, [ATTR.taskStatus]: status });
      let overdue = 0;
      let stalled = 0;
      for (const task of running.rows) {
        seen.add(task.id);
        if (task.status === 'running' && task.deadlineAt && task.deadlineAt.getTime() < now) overdue++;
        const settled = task.succeeded + task.failed + task.cancelled;
        const known = this.#progress.get(task.id);
        if (!known || known.settled !== settled) this.#progress.set(task.id, { settled, since: now });
        else if (now - known.since >= this.#stalledAfterMs) stalled++;
      }
      observe(METRIC.tasksOverdue, overdue, definition);
      observe(METRIC.tasksStalled, stalled, definition);
    }
    for (const id of this.#progress.keys()) if (!seen.has(id)) this.#progress.delete(id);
  }
}
