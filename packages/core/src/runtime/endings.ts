import { randomUUID } from 'node:crypto';
import type { TaskRecord } from '../store/types.ts';
import type { RuntimeContext } from './context.ts';
import { GroupCommit } from './group-commit.ts';
import { runClaimedFanIn } from './maintenance.ts';

/**
 * The bookkeeping of the tasks this process finished: recording their endings as announced, and
 * claiming and completing their fan-ins. Each is a write to the task row, three per task; with
 * many small tasks ending at once (a settle often finishes several) they are group-committed, so
 * the tasks ending together cost three statements in all instead of three each. A store without
 * the batch methods gets one call per task, as before.
 */
export class Endings {
  readonly #ctx: RuntimeContext;
  readonly #leaseMs: number;
  readonly #announced: GroupCommit<{ taskId: string; round: number }>;
  readonly #claims: GroupCommit<{ taskId: string; kind: string }>;
  readonly #completions: GroupCommit<{ taskId: string; round: number; token: string }>;
  /** Fan-ins a batch claimed, until their caller picks them up (it is waiting on the same batch). */
  readonly #claimed = new Map<string, { task: TaskRecord; token: string }>();

  constructor(ctx: RuntimeContext, fanInLeaseMs: number) {
    this.#ctx = ctx;
    this.#leaseMs = fanInLeaseMs;
    const store = ctx.store;
    this.#announced = new GroupCommit({
      commit: async (tasks) => {
        if (store.markAnnouncedMany) await store.markAnnouncedMany(tasks);
        else for (const t of tasks) await store.markAnnounced(t.taskId, t.round);
        return new Set(tasks.map((t) => t.taskId));
      },
      key: (t) => t.taskId,
      maxBatch: 500,
      maxFlushes: 1,
    });
    this.#claims = new GroupCommit({
      commit: async (entries) => {
        const token = randomUUID();
        const tasks = store.claimFanIns
          ? await store.claimFanIns(entries.map((e) => e.taskId), fanInLeaseMs, token)
          : (await Promise.all(entries.map((e) => store.claimFanIn(e.taskId, [e.kind], fanInLeaseMs, token)))).filter((t) => t !== null);
        for (const task of tasks) this.#claimed.set(task.id, { task, token });
        return new Set(tasks.map((t) => t.id));
      },
      key: (e) => e.taskId,
      maxBatch: 500,
      maxFlushes: 1,
    });
    this.#completions = new GroupCommit({
      commit: async (done) =>
        new Set(
          store.completeFanIns
            ? await store.completeFanIns(done)
            : (await Promise.all(done.map(async (d) => ((await store.completeFanIn(d.taskId, d.round, d.token)) ? d.taskId : null)))).filter((id) => id !== null),
        ),
      key: (d) => d.taskId,
      maxBatch: 500,
      maxFlushes: 1,
    });
  }

  /** Records the ending of `round` as announced (once it was delivered). */
  async markAnnounced(taskId: string, round: number): Promise<void> {
    await this.#announced.push({ taskId, round });
  }

  /** Runs the fan-in of a task this process finished, unless another process holds it or it ran. */
  async fanIn(taskId: string, kind: string): Promise<void> {
    if (!(await this.#claims.push({ taskId, kind }))) return;
    const claimed = this.#claimed.get(taskId);
    this.#claimed.delete(taskId);
    if (!claimed) return;
    const { task, token } = claimed;
    await runClaimedFanIn(this.#ctx, task, token, this.#leaseMs, () => this.#completions.push({ taskId: task.id, round: task.round, token }));
  }

  /** Resolves once every write pushed so far is stored (or has failed). */
  async idle(): Promise<void> {
    await Promise.all([this.#announced.idle(), this.#claims.idle(), this.#completions.idle()]);
  }
}
