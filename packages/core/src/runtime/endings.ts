import { randomUUID } from 'node:crypto';
import type { EndingWrite as StoreEndingWrite, TaskRecord } from '../store/types.ts';
import type { RuntimeContext } from './context.ts';
import { GroupCommit } from './group-commit.ts';
import { runClaimedFanIn } from './maintenance.ts';

/** A write of the store's, and for a claim the task's definition (a store without `recordEndings` claims by kind). */
type EndingWrite = StoreEndingWrite & { kind?: string };

type AnnouncedWrite = Extract<EndingWrite, { write: 'announced' }>;
type ClaimWrite = Extract<EndingWrite, { write: 'claim_fan_in' }>;
type CompleteWrite = Extract<EndingWrite, { write: 'complete_fan_in' }>;

/** One batch holds at most one write of each kind per task. */
const keyOf = (w: Pick<EndingWrite, 'write' | 'taskId'>) => `${w.write}:${w.taskId}`;

/**
 * The bookkeeping of the tasks this process finished: recording their endings as announced, and
 * claiming and completing their fan-ins. Each is a write to the task row, three per task, a few
 * milliseconds apart; they are group-committed together, so the tasks ending together (a settle
 * often finishes several) share one statement for whatever of the three is due at the time
 * (`recordEndings`), instead of a statement per kind or per task. A store without it gets its
 * batch methods, one call per kind, or one call per task without those.
 */
export class Endings {
  readonly #ctx: RuntimeContext;
  readonly #leaseMs: number;
  readonly #writes: GroupCommit<EndingWrite>;
  /** Fan-ins a batch claimed, until their caller picks them up (it is waiting on the same batch). */
  readonly #claimed = new Map<string, { task: TaskRecord; token: string }>();
  /** The writes of a batch a store without `recordEndings` took (and whether they took effect), while the batch is tried again. */
  readonly #applied = new WeakMap<EndingWrite, boolean>();

  constructor(ctx: RuntimeContext, fanInLeaseMs: number) {
    this.#ctx = ctx;
    this.#leaseMs = fanInLeaseMs;
    this.#writes = new GroupCommit<EndingWrite>({ commit: (writes) => this.#record(writes), key: keyOf, maxBatch: 500, maxFlushes: 1 });
  }

  /** One batch of writes: answers the keys of those that took effect (an announcement always does). */
  async #record(writes: readonly EndingWrite[]): Promise<ReadonlySet<string>> {
    const store = this.#ctx.store;
    const token = randomUUID();
    const done = new Set<string>();
    const claimed = (tasks: readonly TaskRecord[]) => {
      for (const task of tasks) {
        this.#claimed.set(task.id, { task, token });
        done.add(keyOf({ taskId: task.id, write: 'claim_fan_in' }));
      }
    };
    const completed = (ids: readonly string[]) => {
      for (const id of ids) done.add(keyOf({ taskId: id, write: 'complete_fan_in' }));
    };
    for (const w of writes) if (w.write === 'announced') done.add(keyOf(w));
    if (store.recordEndings) {
      // One statement: it took effect whole, or not at all (and the batch is tried again).
      const recorded = await store.recordEndings(writes, this.#leaseMs, token);
      claimed(recorded.claimed);
      completed(recorded.completed);
      return done;
    }
    // A call per kind, or per write without the kind's batch method. When one fails the batch is
    // tried again, and the writes whose call went through are not sent twice: a claim sent again
    // would find its own lease and answer no.
    const kinds = (['announced', 'claim_fan_in', 'complete_fan_in'] as const).map((kind) => writes.filter((w) => w.write === kind && !this.#applied.has(w)));
    const [announced, claims, completions] = kinds as [AnnouncedWrite[], ClaimWrite[], CompleteWrite[]];
    const leaseMs = this.#leaseMs;
    /** Runs one call for `group`; once it went through, each of its writes is applied (and whether it took effect). */
    const call = async (group: readonly EndingWrite[], run: () => Promise<void>) => {
      await run();
      for (const w of group) this.#applied.set(w, done.has(keyOf(w)));
    };
    /** A call per write: those that went through stay applied when another fails. */
    const each = async <W extends EndingWrite>(group: readonly W[], run: (w: W) => Promise<void>) => {
      const failed = (await Promise.allSettled(group.map((w) => call([w], () => run(w))))).find((r) => r.status === 'rejected');
      if (failed) throw failed.reason;
    };
    const calls = await Promise.allSettled([
      announced.length === 0 ? null
        : store.markAnnouncedMany ? call(announced, () => store.markAnnouncedMany!(announced))
        : each(announced, (t) => store.markAnnounced(t.taskId, t.round)),
      claims.length === 0 ? null
        : store.claimFanIns ? call(claims, async () => claimed(await store.claimFanIns!(claims.map((c) => c.taskId), leaseMs, token)))
        : each(claims, async (c) => {
            const task = await store.claimFanIn(c.taskId, [c.kind!], leaseMs, token);
            if (task) claimed([task]);
          }),
      completions.length === 0 ? null
        : store.completeFanIns ? call(completions, async () => completed(await store.completeFanIns!(completions)))
        : each(completions, async (d) => {
            if (await store.completeFanIn(d.taskId, d.round, d.token)) completed([d.taskId]);
          }),
    ]);
    const failed = calls.find((c) => c.status === 'rejected');
    if (failed) throw failed.reason;
    for (const w of writes) if (this.#applied.get(w)) done.add(keyOf(w));
    return done;
  }

  /** Records the ending of `round` as announced (once it was delivered). */
  async markAnnounced(taskId: string, round: number): Promise<void> {
    await this.#writes.push({ taskId, write: 'announced', round });
  }

  /** Runs the fan-in of a task this process finished, unless another process holds it or it ran. */
  async fanIn(taskId: string, kind: string): Promise<void> {
    const taken = await this.#writes.push({ taskId, write: 'claim_fan_in', kind }).catch((error: unknown) => {
      this.#claimed.delete(taskId); // a batch that failed in the end may still have claimed it: the lease lapses
      throw error;
    });
    if (!taken) return;
    const claimed = this.#claimed.get(taskId);
    this.#claimed.delete(taskId);
    if (!claimed) return;
    const { task, token } = claimed;
    await runClaimedFanIn(this.#ctx, task, token, this.#leaseMs, () => this.#writes.push({ taskId: task.id, write: 'complete_fan_in', round: task.round, token }));
  }

  /** Resolves once every write pushed so far is stored (or has failed). */
  async idle(): Promise<void> {
    await this.#writes.idle();
  }
}
