import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uuidv7 } from '../store/ids.ts';
import type { EnqueueWork, FanoutStore, NewItem, Outcome, TaskRecord, WorkToEnqueue } from '../store/types.ts';
import type { FanoutError } from '../errors/errors.ts';

export interface ConformanceHarness {
  /** A store on a database that has the store's tables (shared by the whole suite). */
  setup(): Promise<FanoutStore>;
  teardown?(): Promise<void>;
  /** Overwrites a task's counters behind the store's back, to prove reconcile repairs drift. */
  tamperCounters(taskId: string, counters: { succeeded?: number; failed?: number; total?: number }): Promise<void>;
  /**
   * Optional: holds a task's row as another writer of the store would (in an open transaction
   * that wrote it), until the function it answers is called. Without it, the tests of waiting on
   * a held row are skipped.
   */
  holdTaskRow?(taskId: string): Promise<HeldRow>;
}

/** A task row held by another writer (see `ConformanceHarness.holdTaskRow`). */
export interface HeldRow {
  /** Whether a statement of the store is waiting for the row now. */
  waitedFor(): Promise<boolean>;
  /** Ends the writer's transaction. */
  release(): Promise<void>;
}

const LEASE = 30_000;

/** An enqueue that records what it was asked, after proving it can run SQL in the store's transaction. */
function recorder() {
  const enqueued: WorkToEnqueue[] = [];
  const enqueue: EnqueueWork = async (tx, work) => {
    await tx.executeSql('SELECT 1');
    enqueued.push(...work);
  };
  return { enqueued, enqueue };
}

const items = (n: number, prefix = 'k', from = 0): NewItem[] =>
  Array.from({ length: n }, (_, i) => ({ key: `${prefix}${from + i}`, seq: from + i + 1, snapshot: { n: from + i } }));

/**
 * The behaviour every Fanout store must have, as vitest tests. Run it from your store's test
 * file against a real database:
 *
 * ```ts
 * runStoreConformance('my store', { setup: async () => myStore(await freshDatabase()) });
 * ```
 */
export function runStoreConformance(name: string, harness: ConformanceHarness): void {
  describe(`store conformance: ${name}`, () => {
    let store: FanoutStore;
    const kind = `conf_${randomUUID().slice(0, 8).replaceAll('-', '')}`;

    beforeAll(async () => {
      store = await harness.setup();
    });
    afterAll(async () => {
      await harness.teardown?.();
    });

    async function newTask(options: Partial<Parameters<FanoutStore['createTask']>[0]> = {}): Promise<TaskRecord> {
      return store.createTask({ kind, input: { test: true }, maxAttempts: 3, ...options }, async () => {});
    }

    /** The ids of a task's items, in listing order. */
    async function itemIds(taskId: string): Promise<string[]> {
      const ids: string[] = [];
      let cursor: string | null = null;
      do {
        const page = await store.listItems(taskId, { limit: 500, cursor });
        ids.push(...page.rows.map((r) => r.id));
        cursor = page.nextCursor;
      } while (cursor);
      return ids;
    }

    /** A task with n items inserted; its dispatch finished unless `finish` is false. */
    async function dispatched(n: number, options: Partial<Parameters<FanoutStore['createTask']>[0]> = {}, { finish = true } = {}) {
      const task = await newTask(options);
      await store.startDispatch(task.id);
      const rec = recorder();
      await store.insertItems(task.id, items(n), rec.enqueue);
      if (finish) await store.finishDispatch(task.id);
      return { task, rec, ids: await itemIds(task.id) };
    }

    const outcome = (itemId: string, token: string, status: Outcome['status'] = 'succeeded'): Outcome => ({
      itemId,
      token,
      status,
      ...(status === 'succeeded' ? { result: { ok: itemId } } : status === 'failed' ? { error: { code: 'boom', message: 'boom' } } : {}),
    });

    /**
     * What the runtime does after a task ends, done here by hand: its ending recorded as announced
     * and its fan-in as run (a retry is refused until both are, so neither is lost to the new round).
     */
    async function endingDelivered(taskId: string): Promise<void> {
      const task = await store.getTask(taskId);
      if (!task || !['completed', 'failed', 'cancelled'].includes(task.status)) return;
      await store.markAnnounced(taskId, task.round);
      const token = randomUUID();
      if (await store.claimFanIn(taskId, [task.kind], LEASE, token)) await store.completeFanIn(taskId, task.round, token);
    }

    /** `retryFailed` of a task whose ending was delivered. */
    async function retryEnded(...[taskId, ...rest]: Parameters<FanoutStore['retryFailed']>): ReturnType<FanoutStore['retryFailed']> {
      await endingDelivered(taskId);
      return store.retryFailed(taskId, ...rest);
    }

    /** A task of one item, finished: its item claimed and settled succeeded. */
    async function finishedTask(): Promise<TaskRecord> {
      const { task, ids } = await dispatched(1);
      const token = randomUUID();
      await store.claimItems(ids, token, LEASE);
      await store.settleItems([outcome(ids[0]!, token)]);
      return task;
    }

    describe('tasks', () => {
      it('creates a queued task and enqueues its manager in the same transaction', async () => {
        let seen: TaskRecord | null = null;
        const task = await store.createTask({ kind, tenant: 't1', input: { a: 1 }, maxAttempts: 4, maxFailures: 2 }, async (tx, t) => {
          await tx.executeSql('SELECT 1');
          seen = t;
        });
        expect(seen).not.toBeNull();
        expect(task).toMatchObject({ kind, tenant: 't1', input: { a: 1 }, status: 'queued', total: 0, succeeded: 0, failed: 0, cancelled: 0, round: 1, maxAttempts: 4, maxFailures: 2 });
        expect(await store.getTask(task.id)).toMatchObject({ id: task.id, status: 'queued' });
      });

      it('creates nothing when enqueueing the manager fails', async () => {
        const tenant = `rollback-${randomUUID()}`;
        await expect(
          store.createTask({ kind, tenant, input: {}, maxAttempts: 1 }, async () => {
            throw new Error('queue down');
          }),
        ).rejects.toThrow('queue down');
        expect((await store.listTasks({ tenant, limit: 10 })).rows).toHaveLength(0);
      });

      it('answers null for unknown and malformed ids', async () => {
        expect(await store.getTask(randomUUID())).toBeNull();
        expect(await store.getTask('not-a-uuid')).toBeNull();
      });

      it('pages tasks newest first, filtered by tenant', async () => {
        const tenant = `pager-${randomUUID()}`;
        const created: string[] = [];
        for (let i = 0; i < 5; i++) created.push((await newTask({ tenant })).id);
        const first = await store.listTasks({ tenant, limit: 2 });
        const second = await store.listTasks({ tenant, limit: 2, cursor: first.nextCursor });
        const third = await store.listTasks({ tenant, limit: 2, cursor: second.nextCursor });
        expect([...first.rows, ...second.rows, ...third.rows].map((t) => t.id)).toEqual([...created].reverse());
        expect(third.nextCursor).toBeNull();
      });
    });

    describe('dispatch', () => {
      it('moves queued to running once', async () => {
        const task = await newTask();
        expect((await store.startDispatch(task.id))?.status).toBe('running');
        expect((await store.startDispatch(task.id))?.status).toBe('running');
        expect(await store.startDispatch(randomUUID())).toBeNull();
      });

      it('inserts pages at their listing positions, skipping keys it already has', async () => {
        const task = await newTask({ tenant: 'tenant-a' });
        await store.startDispatch(task.id);
        const rec = recorder();
        expect(await store.insertItems(task.id, items(3), rec.enqueue)).toEqual({ inserted: 3, status: 'running' });
        // k1 and k2 are repeats (a manager retried after a crash); k1 also repeats inside the page.
        const page = [...items(3).slice(1), { key: 'k1', seq: 2, snapshot: {} }, ...items(1, 'k', 3)];
        expect(await store.insertItems(task.id, page, rec.enqueue)).toEqual({ inserted: 1, status: 'running' });
        // Each page that inserted something says the task has work (for its tenant's jobs).
        expect(rec.enqueued).toEqual([
          { taskId: task.id, kind, tenant: 'tenant-a' },
          { taskId: task.id, kind, tenant: 'tenant-a' },
        ]);
        const { rows } = await store.listItems(task.id, { limit: 10 });
        expect(rows.map((r) => [r.key, r.seq, r.status])).toEqual([
          ['k0', 1, 'pending'],
          ['k1', 2, 'pending'],
          ['k2', 3, 'pending'],
          ['k3', 4, 'pending'],
        ]);
        expect((await store.getTask(task.id))?.total).toBe(4);
        // One item, as the pages give it; not through another task, nor by a malformed id.
        expect(await store.getItem(task.id, rows[2]!.id)).toEqual(rows[2]);
        const other = await newTask();
        expect(await store.getItem(other.id, rows[2]!.id)).toBeNull();
        expect(await store.getItem(task.id, randomUUID())).toBeNull();
        expect(await store.getItem(task.id, 'not-a-uuid')).toBeNull();
        expect(await store.getItem('not-a-uuid', rows[2]!.id)).toBeNull();
      });

      it('counts pages inserted side by side exactly', async () => {
        const task = await newTask();
        await store.startDispatch(task.id);
        const rec = recorder();
        const results = await Promise.all(Array.from({ length: 6 }, (_, p) => store.insertItems(task.id, items(50, 'k', p * 50), rec.enqueue)));
        expect(results.map((r) => r.inserted)).toEqual([50, 50, 50, 50, 50, 50]);
        expect((await store.getTask(task.id))?.total).toBe(300);
        expect(new Set(await itemIds(task.id)).size).toBe(300);
        expect(rec.enqueued).toHaveLength(6);
      });

      it('rolls a page back when its jobs cannot be enqueued', async () => {
        const task = await newTask();
        await store.startDispatch(task.id);
        await expect(
          store.insertItems(task.id, items(5), async () => {
            throw new Error('enqueue failed');
          }),
        ).rejects.toThrow('enqueue failed');
        expect((await store.getTask(task.id))?.total).toBe(0);
        expect((await store.listItems(task.id, { limit: 10 })).rows).toHaveLength(0);
      });

      it('stores items that failed validation as failed, counted, and asks for no work for them', async () => {
        const task = await newTask();
        await store.startDispatch(task.id);
        const rec = recorder();
        await store.insertItems(task.id, [{ key: 'good', seq: 1, snapshot: {} }, { key: 'bad', seq: 2, snapshot: {}, error: { code: 'validation', message: 'x' } }], rec.enqueue);
        expect(rec.enqueued).toHaveLength(1);
        expect(await store.getTask(task.id)).toMatchObject({ total: 2, failed: 1 });
        const bad = (await store.listItems(task.id, { status: 'failed', limit: 10 })).rows;
        expect(bad).toMatchObject([{ key: 'bad', status: 'failed', error: { code: 'validation' } }]);
        await store.insertItems(task.id, [{ key: 'worse', seq: 3, snapshot: {}, error: { code: 'validation', message: 'x' } }], rec.enqueue);
        expect(rec.enqueued).toHaveLength(1);
      });

      it('inserts nothing into a task that is not running', async () => {
        const task = await newTask();
        const rec = recorder();
        expect(await store.insertItems(task.id, items(2), rec.enqueue)).toEqual({ inserted: 0, status: 'queued' });
        expect(rec.enqueued).toHaveLength(0);
      });

      it('finishes a task at finishDispatch when every item settled before it', async () => {
        const { task, ids } = await dispatched(2, {}, { finish: false });
        const token = randomUUID();
        await store.claimItems(ids, token, LEASE);
        const settled = await store.settleItems(ids.map((id) => outcome(id, token)));
        expect(settled.tasks[0]).toMatchObject({ succeeded: 2, status: 'running', finished: false, dispatched: false });
        const finished = await store.finishDispatch(task.id);
        expect(finished).toMatchObject({ status: 'completed', finished: true, total: 2, succeeded: 2 });
        expect(await store.finishDispatch(task.id)).toBeNull();
      });

      it('finishes an empty task at finishDispatch', async () => {
        const task = await newTask();
        await store.startDispatch(task.id);
        expect(await store.finishDispatch(task.id)).toMatchObject({ status: 'completed', finished: true, total: 0 });
      });
    });

    describe('dispatched at submit', () => {
      const create = (options: Partial<Parameters<FanoutStore['createTask']>[0]>, listed: NewItem[], enqueue: EnqueueWork | null, trace: Record<string, string> | null = null) =>
        enqueue === null
          ? store.createDispatchedTaskAlone!({ kind, input: { test: true }, maxAttempts: 3, ...options }, listed, trace)
          : store.createDispatchedTask!({ kind, input: { test: true }, maxAttempts: 3, ...options }, listed, enqueue, trace);

      it('creates a running task with its items and their jobs, its dispatch done, in one transaction', async (t) => {
        if (!store.createDispatchedTask) return t.skip();
        const rec = recorder();
        const id = uuidv7();
        const trace = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
        const { task, inserted, settled } = await create({ id, tenant: 'inline' }, items(3), rec.enqueue, trace);
        expect(inserted).toBe(3);
        expect(task).toMatchObject({ id, status: 'running', total: 3, replayed: false });
        expect(task.startedAt).toBeInstanceOf(Date);
        expect(task.dispatchedAt).toBeInstanceOf(Date);
        expect(settled).toMatchObject({ id, status: 'running', finished: false, dispatched: true });
        expect(rec.enqueued).toEqual([{ taskId: id, kind, tenant: 'inline' }]);
        const { rows } = await store.listItems(id, { limit: 10 });
        expect(rows.map((r) => [r.key, r.seq, r.status])).toEqual([['k0', 1, 'pending'], ['k1', 2, 'pending'], ['k2', 3, 'pending']]);
        // Its items are claimed like any other dispatched task's, and the last settle finishes it.
        const token = randomUUID();
        const ids = rows.map((r) => r.id);
        expect((await store.claimItems(ids, token, LEASE)).claimed).toHaveLength(3);
        const done = await store.settleItems(ids.map((itemId) => outcome(itemId, token)));
        expect(done.tasks[0]).toMatchObject({ status: 'completed', finished: true, succeeded: 3 });
      });

      it("alone (the caller saw its tenant's jobs waiting): stores the task and its items all the same, all or nothing, and enqueues nothing", async (t) => {
        if (!store.createDispatchedTaskAlone) return t.skip();
        const tenant = `inline-nojobs-${randomUUID()}`;
        const { task, inserted, settled } = await create({ tenant }, items(3), null);
        expect(inserted).toBe(3);
        expect(task).toMatchObject({ status: 'running', total: 3, replayed: false });
        expect(settled).toMatchObject({ status: 'running', finished: false, dispatched: true });
        const { rows } = await store.listItems(task.id, { limit: 10 });
        expect(rows.map((r) => r.status)).toEqual(['pending', 'pending', 'pending']);
        const token = randomUUID();
        expect((await store.claimItems(rows.map((r) => r.id), token, LEASE)).claimed).toHaveLength(3);
        // A replayed key inserts nothing here either.
        const first = await create({ tenant, idempotencyKey: 'once-null', requestHash: 'h' }, items(2), null);
        expect(await create({ tenant, idempotencyKey: 'once-null', requestHash: 'h' }, items(2), null)).toMatchObject({ inserted: 0, settled: null, task: { id: first.task.id, replayed: true } });
        // An item the table refuses (a NUL in its snapshot) fails the whole write: no task is left.
        const refused = `inline-nojobs-refused-${randomUUID()}`;
        await expect(create({ tenant: refused }, [...items(2), { key: 'nul', seq: 3, snapshot: { text: 'a\u0000b' } }], null)).rejects.toThrow();
        expect((await store.listTasks({ tenant: refused, limit: 10 })).rows).toHaveLength(0);
      });

      it('finishes at once a task with no item left to run', async (t) => {
        if (!store.createDispatchedTask) return t.skip();
        const rec = recorder();
        const empty = await create({}, [], rec.enqueue);
        expect(empty.settled).toMatchObject({ status: 'completed', finished: true, total: 0 });
        expect(empty.task.status).toBe('completed');
        const invalid = await create({}, [{ key: 'bad', seq: 1, snapshot: {}, error: { code: 'validation', message: 'x' } }], rec.enqueue);
        expect(invalid.settled).toMatchObject({ finished: true, total: 1, failed: 1 });
        expect(invalid.task.completedAt).toBeInstanceOf(Date);
        expect(rec.enqueued).toHaveLength(0);
      });

      it('stops a task whose items failed validation past its tolerance, as a manager would', async (t) => {
        if (!store.createDispatchedTask) return t.skip();
        const rec = recorder();
        const bad = { key: 'bad', seq: 3, snapshot: {}, error: { code: 'validation', message: 'x' } };
        const { settled } = await create({ maxFailures: 0 }, [...items(2), bad], rec.enqueue);
        expect(settled).toMatchObject({ status: 'stopping', stopReason: 'failure_threshold', overFailureLimit: true, finished: false, total: 3, failed: 1 });
        const stopped = await store.stopTask(settled!.id, 'failure_threshold', 'too many failures');
        expect(stopped?.task).toMatchObject({ status: 'failed', cancelled: 2, failed: 1 });
      });

      it('keeps the first item of a key its listing repeats, as a page does, and counts only what went in', async (t) => {
        if (!store.createDispatchedTask) return t.skip();
        const rec = recorder();
        const [a, b] = items(2);
        const again = { key: a!.key, seq: 3, snapshot: { n: 99 } };
        const badAgain = { key: b!.key, seq: 4, snapshot: {}, error: { code: 'validation', message: 'x' } };
        // Two keys that differ only in a lone surrogate are one key once stored (both U+FFFD there).
        const lone = [{ key: 'x\uD800', seq: 5, snapshot: { n: 5 } }, { key: 'x\uD801', seq: 6, snapshot: { n: 6 } }];
        const { task, inserted } = await create({}, [a!, b!, again, badAgain, ...lone], rec.enqueue);
        expect(inserted).toBe(3);
        expect(task).toMatchObject({ total: 3, failed: 0, status: 'running' });
        expect(await store.getTask(task.id)).toMatchObject({ total: 3, failed: 0, succeeded: 0, status: 'running' });
        const { rows } = await store.listItems(task.id, { limit: 10 });
        expect(rows.map((r) => [r.key, r.seq, r.status])).toEqual([['k0', 1, 'pending'], ['k1', 2, 'pending'], ['x\uFFFD', 5, 'pending']]);
        expect(rows[0]!.snapshot).toEqual(a!.snapshot);
        // The items kept are ready to run, and their settles finish the task.
        const token = randomUUID();
        const ids = rows.map((r) => r.id);
        expect((await store.claimItems(ids, token, LEASE)).claimed).toHaveLength(3);
        const done = await store.settleItems(ids.map((itemId) => outcome(itemId, token)));
        expect(done.tasks[0]).toMatchObject({ status: 'completed', finished: true, succeeded: 3 });
      });

      it('stores nothing when its jobs cannot be enqueued', async (t) => {
        if (!store.createDispatchedTask) return t.skip();
        const tenant = `inline-rollback-${randomUUID()}`;
        await expect(
          create({ tenant }, items(2), async () => {
            throw new Error('queue down');
          }),
        ).rejects.toThrow('queue down');
        expect((await store.listTasks({ tenant, limit: 10 })).rows).toHaveLength(0);
      });

      it('replays an idempotency key without inserting anything', async (t) => {
        if (!store.createDispatchedTask) return t.skip();
        const tenant = `inline-key-${randomUUID()}`;
        const rec = recorder();
        const first = await create({ tenant, idempotencyKey: 'once', requestHash: 'h' }, items(2), rec.enqueue);
        const again = await create({ tenant, idempotencyKey: 'once', requestHash: 'h' }, items(2), rec.enqueue);
        expect(again).toMatchObject({ inserted: 0, settled: null, task: { id: first.task.id, replayed: true, total: 2 } });
        expect(rec.enqueued).toHaveLength(1);
        await expect(create({ tenant, idempotencyKey: 'once', requestHash: 'other' }, items(2), rec.enqueue)).rejects.toMatchObject({ code: 'conflict' });
      });
    });

    describe('claims', () => {
      it('claims pending items once; a second claimer gets nothing', async () => {
        const { ids } = await dispatched(3);
        const a = await store.claimItems(ids, randomUUID(), LEASE);
        expect(a.claimed.map((c) => c.itemId).sort()).toEqual([...ids].sort());
        expect(a.claimed[0]).toMatchObject({ kind, attempt: 1, maxAttempts: 3, round: 1 });
        expect(a.claimed[0]!.snapshot).toHaveProperty('n');
        const b = await store.claimItems(ids, randomUUID(), LEASE);
        expect(b.claimed).toHaveLength(0);
        expect(b.skipped.sort()).toEqual([...ids].sort());
      });

      it('lets exactly one of many racing claimers have each item', async () => {
        const { ids } = await dispatched(50);
        const results = await Promise.all(Array.from({ length: 8 }, () => store.claimItems(ids, randomUUID(), LEASE)));
        const claimed = results.flatMap((r) => r.claimed.map((c) => c.itemId));
        expect(claimed.sort()).toEqual([...ids].sort());
      });

      it('takes over an item whose lease lapsed, as the next attempt, until attempts run out', async () => {
        const { ids } = await dispatched(1, { maxAttempts: 2 });
        const first = await store.claimItems(ids, randomUUID(), 1);
        expect(first.claimed[0]?.attempt).toBe(1);
        await new Promise((r) => setTimeout(r, 20)); // let the 1 ms lease lapse
        const second = await store.claimItems(ids, randomUUID(), 1);
        expect(second.claimed[0]?.attempt).toBe(2);
        await new Promise((r) => setTimeout(r, 20));
        expect((await store.claimItems(ids, randomUUID(), LEASE)).claimed).toHaveLength(0);
      });

      it('renews only leases still held under their token', async () => {
        const { ids } = await dispatched(2);
        const token = randomUUID();
        await store.claimItems(ids, token, LEASE);
        expect((await store.renewLeases(ids.map((itemId) => ({ itemId, token })), LEASE)).sort()).toEqual([...ids].sort());
        expect(await store.renewLeases([{ itemId: ids[0]!, token: randomUUID() }], LEASE)).toEqual([]);
      });

      it('does not claim items of a stopped task', async () => {
        const { task, ids } = await dispatched(2);
        await store.stopTask(task.id, 'cancelled');
        expect((await store.claimItems(ids, randomUUID(), LEASE)).claimed).toHaveLength(0);
        expect(await store.stoppedTasks([task.id])).toEqual([task.id]);
      });
    });

    describe('settle', () => {
      it('reports exactly which outcomes of a batch were recorded', async () => {
        const { task, ids } = await dispatched(4);
        const token = randomUUID();
        await store.claimItems(ids.slice(0, 3), token, LEASE);
        await store.settleItems([outcome(ids[0]!, token)]);
        // ids[0] is settled already, ids[1] is held under another token, ids[3] was never claimed.
        const result = await store.settleItems([outcome(ids[0]!, token), outcome(ids[1]!, randomUUID()), outcome(ids[2]!, token, 'failed'), outcome(ids[3]!, token)]);
        expect(result.settled).toEqual([ids[2]]);
        expect(result.tasks).toMatchObject([{ id: task.id, succeeded: 1, failed: 1 }]);
      });

      it('counts each outcome once, and only under the claim that holds the item', async () => {
        const { task, ids } = await dispatched(3);
        const token = randomUUID();
        await store.claimItems(ids, token, LEASE);
        const wrong = await store.settleItems([outcome(ids[0]!, randomUUID())]);
        expect(wrong.settled).toEqual([]);
        const first = await store.settleItems([outcome(ids[0]!, token), outcome(ids[1]!, token, 'failed')]);
        expect(first.settled.sort()).toEqual([ids[0], ids[1]].sort());
        expect(first.tasks).toMatchObject([{ id: task.id, succeeded: 1, failed: 1, finished: false }]);
        const again = await store.settleItems([outcome(ids[0]!, token)]);
        expect(again.settled).toEqual([]);
        const last = await store.settleItems([outcome(ids[2]!, token)]);
        expect(last.tasks).toMatchObject([{ status: 'completed', succeeded: 2, failed: 1, total: 3, finished: true }]);
        const stored = await store.getTask(task.id);
        expect(stored?.completedAt).toBeInstanceOf(Date);
        const item = (await store.listItems(task.id, { limit: 10 })).rows.find((r) => r.id === ids[0]);
        expect(item).toMatchObject({ status: 'succeeded', result: { ok: ids[0] } });
      });

      it('finishes a task exactly once under concurrent settles', async () => {
        const { task, ids } = await dispatched(120);
        const token = randomUUID();
        await store.claimItems(ids, token, LEASE);
        const chunks = Array.from({ length: 24 }, (_, i) => ids.slice(i * 5, i * 5 + 5));
        const results = await Promise.all(chunks.map((chunk) => store.settleItems(chunk.map((id) => outcome(id, token)))));
        expect(results.flatMap((r) => r.tasks).filter((t) => t.finished)).toHaveLength(1);
        expect(await store.getTask(task.id)).toMatchObject({ status: 'completed', succeeded: 120, total: 120 });
      });

      it('settles items of several tasks in one call', async () => {
        const a = await dispatched(2);
        const b = await dispatched(1);
        const token = randomUUID();
        await store.claimItems([...a.ids, ...b.ids], token, LEASE);
        const result = await store.settleItems([...a.ids, ...b.ids].map((id) => outcome(id, token)));
        expect(result.tasks.map((t) => [t.id, t.succeeded, t.finished]).sort()).toEqual(
          [
            [a.task.id, 2, true],
            [b.task.id, 1, true],
          ].sort(),
        );
      });

      it('reports when failures pass the task tolerance', async () => {
        const { ids } = await dispatched(4, { maxFailures: 1 });
        const token = randomUUID();
        await store.claimItems(ids, token, LEASE);
        const one = await store.settleItems([outcome(ids[0]!, token, 'failed')]);
        expect(one.tasks[0]?.overFailureLimit).toBe(false);
        const two = await store.settleItems([outcome(ids[1]!, token, 'failed')]);
        expect(two.tasks[0]?.overFailureLimit).toBe(true);
      });

      it('stops a task the moment it passes its tolerance, and ends it failed if that was the last item', async () => {
        const { task, ids } = await dispatched(3, { maxFailures: 0 });
        const token = randomUUID();
        await store.claimItems(ids, token, LEASE);
        const first = await store.settleItems([outcome(ids[0]!, token, 'failed')]);
        expect(first.tasks[0]).toMatchObject({ status: 'stopping', stopReason: 'failure_threshold', overFailureLimit: true, finished: false });
        await store.settleItems([outcome(ids[1]!, token)]);
        const last = await store.settleItems([outcome(ids[2]!, token)]);
        expect(last.tasks[0]).toMatchObject({ status: 'failed', stopReason: 'failure_threshold', succeeded: 2, failed: 1, finished: true });
        expect((await store.getTask(task.id))?.completedAt).toBeInstanceOf(Date);
      });

      it('ends a task failed when its dispatch alone passed the tolerance', async () => {
        const task = await newTask({ maxFailures: 0 });
        await store.startDispatch(task.id);
        await store.insertItems(task.id, [{ key: 'bad', seq: 1, snapshot: {}, error: { code: 'validation', message: 'x' } }], recorder().enqueue);
        expect(await store.finishDispatch(task.id)).toMatchObject({ status: 'failed', stopReason: 'failure_threshold', failed: 1, finished: true });
      });

      it('reports a failure ratio only against the final total', async () => {
        const { ids } = await dispatched(4, { maxFailureRatio: 0.5 });
        const token = randomUUID();
        await store.claimItems(ids, token, LEASE);
        const r = await store.settleItems([outcome(ids[0]!, token, 'failed'), outcome(ids[1]!, token, 'failed')]);
        expect(r.tasks[0]?.overFailureLimit).toBe(false);
        const r2 = await store.settleItems([outcome(ids[2]!, token, 'failed')]);
        expect(r2.tasks[0]?.overFailureLimit).toBe(true);
      });
    });

    describe('claim next (the scheduler)', () => {
      /** A running task of `tenant` with `n` items, dispatched. */
      const tenantTask = async (tenant: string | null, n: number, options: Partial<Parameters<FanoutStore['createTask']>[0]> = {}) => dispatched(n, { tenant, ...options });
      const next = (tenant: string | null, after: string | null, limit: number, extra: Partial<Parameters<FanoutStore['claimNext']>[0]> = {}) =>
        store.claimNext({ kind, tenant, after, limit, token: randomUUID(), leaseMs: LEASE, ...extra });

      it('claims the next pending items of a task in listing order, up to the limit, as a claim does', async () => {
        const tenant = `t-${randomUUID()}`;
        const { task, ids } = await tenantTask(tenant, 5);
        const first = await next(tenant, null, 3);
        expect(first.taskId).toBe(task.id);
        expect(first.claimed.map((c) => c.itemId)).toEqual(ids.slice(0, 3));
        expect(first.claimed[0]).toMatchObject({ taskId: task.id, kind, tenant, attempt: 1, round: 1 });
        const rest = await next(tenant, null, 10);
        expect(rest.claimed.map((c) => c.itemId)).toEqual(ids.slice(3));
        // Nothing left to run: no task, and the held items are not claimable by id either.
        expect(await next(tenant, null, 10)).toEqual({ claimed: [], taskId: null, atQuota: false });
        expect((await store.claimItems(ids, randomUUID(), LEASE)).claimed).toHaveLength(0);
        expect(await next(tenant, null, 0)).toMatchObject({ claimed: [] });
      });

      it('serves the tenant\'s running tasks in turn after `after`, higher priority first, and only that tenant', async () => {
        const tenant = `t-${randomUUID()}`;
        const a = await tenantTask(tenant, 4);
        const b = await tenantTask(tenant, 4);
        const c = await tenantTask(tenant, 4);
        const other = await tenantTask(`t-${randomUUID()}`, 4);
        const served: string[] = [];
        let after: string | null = null;
        for (let i = 0; i < 6; i++) {
          const r = await next(tenant, after, 1);
          served.push(r.taskId!);
          after = r.taskId;
        }
        expect(served).toEqual([a.task.id, b.task.id, c.task.id, a.task.id, b.task.id, c.task.id]);
        expect((await store.itemCounts(other.task.id)).running).toBe(0);
        // A task of higher priority is served before the others, whatever the turn.
        const urgent = await tenantTask(tenant, 2, { priority: 5 });
        expect((await next(tenant, c.task.id, 1)).taskId).toBe(urgent.task.id);
        expect((await next(tenant, urgent.task.id, 1)).taskId).toBe(urgent.task.id);
        expect((await next(tenant, urgent.task.id, 1)).taskId).toBe(a.task.id); // its items are all claimed
      });

      it('with room left after a task, takes the next tasks\' items in turn: small tasks share a claim', async () => {
        const tenant = `t-${randomUUID()}`;
        const a = await tenantTask(tenant, 2);
        const b = await tenantTask(tenant, 2);
        const c = await tenantTask(tenant, 2);
        const first = await next(tenant, null, 5);
        expect(first.claimed.map((i) => i.itemId).sort()).toEqual([...a.ids, ...b.ids, c.ids[0]!].sort());
        expect(first.taskId).toBe(c.task.id); // served last: the next claim starts after it
        const second = await next(tenant, first.taskId, 10);
        expect(second.claimed.map((i) => i.itemId)).toEqual([c.ids[1]]);
        expect(second.taskId).toBe(c.task.id);
      });

      it('serves the tasks without a tenant as one tenant, and skips tasks that are not running', async () => {
        const tenant = null;
        const queued = await newTask(); // never dispatched
        const stopped = await tenantTask(tenant, 2);
        await store.stopTask(stopped.task.id, 'cancelled');
        const live = await tenantTask(tenant, 1);
        // Other tests' tasks without a tenant may be served too; ours are never the stopped or queued one.
        for (let i = 0; i < 50; i++) {
          const r = await next(tenant, null, 100);
          if (r.taskId === null) break;
          expect([queued.id, stopped.task.id]).not.toContain(r.taskId);
        }
        expect((await store.itemCounts(live.task.id)).running).toBe(1);
      });

      it('leaves items waiting on a retry delay until they are due', async () => {
        const tenant = `t-${randomUUID()}`;
        const { task, ids } = await tenantTask(tenant, 2);
        const token = randomUUID();
        expect((await next(tenant, null, 2, { token })).claimed).toHaveLength(2);
        await store.releaseItems(
          [
            { itemId: ids[0]!, token, error: { code: 'busy', message: 'later', attempt: 1 }, delayMs: 60_000 },
            { itemId: ids[1]!, token, error: { code: 'busy', message: 'now', attempt: 1 }, delayMs: 0 },
          ],
          recorder().enqueue,
        );
        const again = await next(tenant, null, 5);
        expect(again.claimed.map((c) => [c.itemId, c.attempt])).toEqual([[ids[1], 2]]);
        expect(await next(tenant, null, 5)).toMatchObject({ claimed: [], taskId: null });
        expect(await store.pendingWork(task.id)).toMatchObject({ now: false });
        expect((await store.pendingWork(task.id)).nextRetryAt!.getTime()).toBeGreaterThan(Date.now() + 50_000);
      });

      it('never gives one item to two concurrent claims', async () => {
        const tenant = `t-${randomUUID()}`;
        const { ids } = await tenantTask(tenant, 120);
        const results = await Promise.all(Array.from({ length: 12 }, () => next(tenant, null, 15)));
        const claimed = results.flatMap((r) => r.claimed.map((c) => c.itemId));
        expect(new Set(claimed).size).toBe(claimed.length);
        expect(claimed.length).toBeLessThanOrEqual(120);
        expect(claimed.every((id) => ids.includes(id))).toBe(true);
        // Whatever the locks let through, what is left is claimed after.
        const rest = await next(tenant, null, 200);
        expect(claimed.length + rest.claimed.length).toBe(120);
      });

      it('keeps a tenant within its in-flight quota, across claims, and says when it is at it', async () => {
        const tenant = `t-${randomUUID()}`;
        const { ids } = await tenantTask(tenant, 10);
        const quota = { maxInFlight: 4 };
        const token = randomUUID();
        expect((await next(tenant, null, 3, { ...quota, token })).claimed.map((c) => c.itemId)).toEqual(ids.slice(0, 3));
        const results = await Promise.all([next(tenant, null, 3, quota), next(tenant, null, 3, quota)]);
        expect(results.flatMap((r) => r.claimed)).toHaveLength(1);
        const blocked = await next(tenant, null, 3, quota);
        expect(blocked).toEqual({ claimed: [], taskId: null, atQuota: true });
        // Settling one makes room for one.
        await store.settleItems([outcome(ids[0]!, token)]);
        expect((await next(tenant, null, 3, quota)).claimed).toHaveLength(1);
      });

      it('serves only the first running tasks of a tenant when told to', async () => {
        const tenant = `t-${randomUUID()}`;
        const a = await tenantTask(tenant, 3);
        const b = await tenantTask(tenant, 3);
        const served = new Set<string>();
        let after: string | null = null;
        for (let i = 0; i < 3; i++) {
          const r = await next(tenant, after, 1, { maxRunningTasks: 1 });
          served.add(r.taskId!);
          after = r.taskId;
        }
        expect([...served]).toEqual([a.task.id]);
        expect((await next(tenant, after, 1, { maxRunningTasks: 1 })).taskId).toBeNull();
        expect((await next(tenant, after, 1, { maxRunningTasks: 2 })).taskId).toBe(b.task.id);
      });
    });

    describe('release', () => {
      it('puts a transient failure back to pending and enqueues its retry with the delay', async () => {
        const { task, ids } = await dispatched(1);
        const token = randomUUID();
        await store.claimItems(ids, token, LEASE);
        const rec = recorder();
        const released = await store.releaseItems([{ itemId: ids[0]!, token, error: { code: 'http_429', message: 'slow down', attempt: 1 }, delayMs: 1234 }], rec.enqueue);
        expect(released).toEqual(ids);
        const [work] = rec.enqueued;
        expect(rec.enqueued).toHaveLength(1);
        expect(work).toMatchObject({ taskId: task.id, kind, tenant: null, delayMs: 1234 });
        const [item] = (await store.listItems(task.id, { limit: 1 })).rows;
        expect(item).toMatchObject({ status: 'pending', attempts: 1, error: { code: 'http_429' } });
        expect(item!.retryAt!.getTime()).toBeGreaterThan(Date.now() + 500);
        // A store that says when the retry is due says it by the clock that stamped the item.
        if (work!.dueAt !== undefined) expect(work!.dueAt).toBe(item!.retryAt!.getTime());
        const again = await store.claimItems(ids, randomUUID(), LEASE);
        expect(again.claimed[0]?.attempt).toBe(2);
      });

      it('does not release under a lost claim or for a stopped task', async () => {
        const { task, ids } = await dispatched(2);
        const token = randomUUID();
        await store.claimItems(ids, token, LEASE);
        const rec = recorder();
        expect(await store.releaseItems([{ itemId: ids[0]!, token: randomUUID(), error: { code: 'x', message: 'x' }, delayMs: 0 }], rec.enqueue)).toEqual([]);
        await store.stopTask(task.id, 'cancelled');
        expect(await store.releaseItems([{ itemId: ids[1]!, token, error: { code: 'x', message: 'x' }, delayMs: 0 }], rec.enqueue)).toEqual([]);
        expect(rec.enqueued).toEqual([]);
      });
    });

    describe('stop', () => {
      it('cancels pending items at once and finishes when the running ones settle', async () => {
        const { task, ids } = await dispatched(5);
        const token = randomUUID();
        await store.claimItems(ids.slice(0, 2), token, LEASE);
        const stop = await store.stopTask(task.id, 'cancelled');
        expect(stop).toMatchObject({ changed: true, cancelledItems: 3, task: { status: 'stopping', cancelled: 3, finished: false } });
        const again = await store.stopTask(task.id, 'cancelled');
        expect(again).toMatchObject({ changed: false, cancelledItems: 0 });
        await store.settleItems([outcome(ids[0]!, token)]);
        const last = await store.settleItems([outcome(ids[1]!, token, 'cancelled')]);
        expect(last.tasks[0]).toMatchObject({ status: 'cancelled', succeeded: 1, cancelled: 4, total: 5, finished: true });
      });

      it('cancels a queued task outright and fails a task stopped by tolerance or deadline', async () => {
        const queued = await newTask();
        expect(await store.stopTask(queued.id, 'cancelled')).toMatchObject({ changed: true, task: { status: 'cancelled', finished: true, total: 0 } });
        const { task } = await dispatched(2, { deadlineAt: new Date(Date.now() - 1000) });
        expect(await store.stopTask(task.id, 'deadline', 'too late')).toMatchObject({ task: { status: 'failed', stopReason: 'deadline', cancelled: 2, finished: true } });
        expect((await store.getTask(task.id))?.error).toBe('too late');
      });

      it('leaves a running task alone when the reason of an automatic stop no longer holds under its lock', async () => {
        // A deadline stop decided before the task was given a later deadline (a retried round), or none.
        for (const deadlineAt of [new Date(Date.now() + 3600_000), null]) {
          const { task } = await dispatched(2, { deadlineAt });
          expect(await store.stopTask(task.id, 'deadline', 'too late')).toMatchObject({ changed: false, task: { status: 'running', cancelled: 0 } });
        }
        // A manager's failure decided before the manager finished the dispatch.
        const { task } = await dispatched(2);
        expect(await store.stopTask(task.id, 'manager_failed', 'gone')).toMatchObject({ changed: false, task: { status: 'running', cancelled: 0, stopReason: null } });
        // A person's cancel always stops it.
        expect(await store.stopTask(task.id, 'cancelled')).toMatchObject({ changed: true, task: { status: 'cancelled', cancelled: 2 } });
      });

      it('ends the dispatch of a task whose manager failed, so the task can finish', async () => {
        const { task, ids } = await dispatched(3, {}, { finish: false });
        const token = randomUUID();
        await store.claimItems([ids[0]!], token, LEASE);
        const stop = await store.stopTask(task.id, 'manager_failed', 'listing failed');
        expect(stop?.task).toMatchObject({ status: 'stopping', dispatched: true, cancelled: 2, total: 3 });
        const last = await store.settleItems([outcome(ids[0]!, token)]);
        expect(last.tasks[0]).toMatchObject({ status: 'failed', stopReason: 'manager_failed', succeeded: 1, cancelled: 2, finished: true });
      });

      it('leaves a finished task alone', async () => {
        const { task, ids } = await dispatched(1);
        const token = randomUUID();
        await store.claimItems(ids, token, LEASE);
        await store.settleItems([outcome(ids[0]!, token)]);
        expect(await store.stopTask(task.id, 'cancelled')).toMatchObject({ changed: false, task: { status: 'completed', finished: false } });
        expect(await store.stopTask(randomUUID(), 'cancelled')).toBeNull();
      });

      it('finishes a task stopped during dispatch when dispatch ends', async () => {
        const { task, rec } = await dispatched(2, {}, { finish: false });
        await store.stopTask(task.id, 'cancelled');
        expect(await store.insertItems(task.id, items(2, 'k', 2), rec.enqueue)).toEqual({ inserted: 0, status: 'stopping' });
        expect(await store.finishDispatch(task.id)).toMatchObject({ status: 'cancelled', cancelled: 2, total: 2, finished: true });
      });
    });

    describe('retry failed', () => {
      it('re-opens a finished task for its failed items only, with counters corrected', async () => {
        const { task, ids } = await dispatched(3);
        const token = randomUUID();
        await store.claimItems(ids, token, LEASE);
        await store.settleItems([outcome(ids[0]!, token), outcome(ids[1]!, token, 'failed'), outcome(ids[2]!, token, 'failed')]);
        const rec = recorder();
        const retry = await retryEnded(task.id, rec.enqueue);
        expect(retry.retried).toBe(2);
        expect(retry.task).toMatchObject({ status: 'running', round: 2, succeeded: 1, failed: 0, total: 3, completedAt: null });
        expect(rec.enqueued).toEqual([{ taskId: task.id, kind, tenant: null }]);
        // The items back start their times afresh: a retried item's duration is its new round's.
        const back = (await store.listItems(task.id, { limit: 10 })).rows.filter((i) => i.status === 'pending');
        expect(back.map((i) => [i.startedAt, i.finishedAt])).toEqual([
          [null, null],
          [null, null],
        ]);
        const t2 = randomUUID();
        const claimed = await store.claimItems(ids, t2, LEASE);
        expect(claimed.claimed.map((c) => [c.attempt, c.round])).toEqual([
          [1, 2],
          [1, 2],
        ]);
        await store.settleItems([outcome(ids[1]!, t2)]);
        const end = await store.settleItems([outcome(ids[2]!, t2, 'failed')]);
        expect(end.tasks[0]).toMatchObject({ status: 'completed', succeeded: 2, failed: 1, round: 2, finished: true });
      });

      it("waits for the ending of the round that ended: refused (a conflict that passes, with retryAfterMs) until it was announced and its fan-in taken up", async () => {
        const { task, ids } = await dispatched(1);
        const token = randomUUID();
        await store.claimItems(ids, token, LEASE);
        await store.settleItems([outcome(ids[0]!, token, 'failed')]);
        const refused = { code: 'conflict', retryAfterMs: expect.any(Number) };
        await expect(store.retryFailed(task.id, recorder().enqueue)).rejects.toMatchObject(refused);
        await store.markAnnounced(task.id, 1);
        await expect(store.retryFailed(task.id, recorder().enqueue)).rejects.toMatchObject(refused);
        // A fan-in that failed gave its lease up: still to come.
        const failing = randomUUID();
        expect(await store.claimFanIn(task.id, [kind], LEASE, failing)).not.toBeNull();
        await store.releaseFanIn(task.id, failing, 0);
        await expect(store.retryFailed(task.id, recorder().enqueue)).rejects.toMatchObject(refused);
        // One running completes its round whatever happens to the task: the retry goes on.
        const fanIn = randomUUID();
        expect(await store.claimFanIn(task.id, [kind], LEASE, fanIn)).not.toBeNull();
        expect(await store.retryFailed(task.id, recorder().enqueue)).toMatchObject({ retried: 1, task: { round: 2, status: 'running' } });
        expect(await store.completeFanIn(task.id, 1, fanIn)).toBe(true);
        // A conflict that does not pass by itself says so by having no retryAfterMs.
        const running = await store.retryFailed(task.id, recorder().enqueue).catch((error: unknown) => error);
        expect(running).toMatchObject({ code: 'conflict', retryAfterMs: undefined });
        // Nothing to retry is said at once, not after the wait.
        const { task: clean, ids: cleanIds } = await dispatched(1);
        const t2 = randomUUID();
        await store.claimItems(cleanIds, t2, LEASE);
        await store.settleItems([outcome(cleanIds[0]!, t2)]);
        expect(await store.retryFailed(clean.id, recorder().enqueue).catch((error: unknown) => error)).toMatchObject({ code: 'conflict', retryAfterMs: undefined });
      });

      it('refuses a running task, a task without failures, and an unknown task', async () => {
        const { task, ids } = await dispatched(1);
        const rec = recorder();
        await expect(retryEnded(task.id, rec.enqueue)).rejects.toMatchObject({ code: 'conflict' });
        const token = randomUUID();
        await store.claimItems(ids, token, LEASE);
        await store.settleItems([outcome(ids[0]!, token)]);
        await expect(retryEnded(task.id, rec.enqueue)).rejects.toMatchObject({ code: 'conflict' });
        await expect(retryEnded(randomUUID(), rec.enqueue)).rejects.toMatchObject({ code: 'not_found' });
      });

      it('refuses a task whose dispatch was cut short (a stop while listing, a failed manager), but not one stopped after it', async () => {
        const failing = (ids: string[], token: string) => ids.map((id) => outcome(id, token, 'failed'));
        // Stopped by its failure tolerance while its items were listed.
        const cut = await dispatched(2, { maxFailures: 0 }, { finish: false });
        const t1 = randomUUID();
        await store.claimItems(cut.ids, t1, LEASE);
        await store.settleItems(failing(cut.ids, t1));
        expect(await store.finishDispatch(cut.task.id, { cutShort: true })).toMatchObject({ status: 'failed', stopReason: 'failure_threshold' });
        await expect(retryEnded(cut.task.id, recorder().enqueue)).rejects.toMatchObject({ code: 'conflict' });
        // A failed manager.
        const broken = await dispatched(1, {}, { finish: false });
        await store.stopTask(broken.task.id, 'manager_failed', 'boom');
        await expect(retryEnded(broken.task.id, recorder().enqueue)).rejects.toMatchObject({ code: 'conflict' });
        // Stopped by its failure tolerance after every item was listed: retried, with the items the stop cancelled.
        const whole = await dispatched(3, { maxFailures: 0 });
        const t2 = randomUUID();
        await store.claimItems([whole.ids[0]!], t2, LEASE);
        expect((await store.settleItems(failing([whole.ids[0]!], t2))).tasks[0]).toMatchObject({ status: 'stopping', stopReason: 'failure_threshold' });
        expect(await store.stopTask(whole.task.id, 'failure_threshold')).toMatchObject({ task: { status: 'failed', cancelled: 2 } });
        expect(await retryEnded(whole.task.id, recorder().enqueue)).toMatchObject({ retried: 3, task: { status: 'running', failed: 0, cancelled: 0 } });
      });

      it('ignores a stop for the failure tolerance that comes after the task was retried (a stop its last round asked for)', async () => {
        const { task, ids } = await dispatched(3, { maxFailures: 0 });
        const t1 = randomUUID();
        await store.claimItems([ids[0]!], t1, LEASE);
        expect((await store.settleItems([outcome(ids[0]!, t1, 'failed')])).tasks[0]).toMatchObject({ status: 'stopping', stopReason: 'failure_threshold' });
        expect(await store.stopTask(task.id, 'failure_threshold')).toMatchObject({ task: { status: 'failed', cancelled: 2 } });
        await retryEnded(task.id, recorder().enqueue);
        // A second settle of the first round had asked for the same stop; it arrives late.
        expect(await store.stopTask(task.id, 'failure_threshold')).toMatchObject({ changed: false, cancelledItems: 0, task: { status: 'running', round: 2 } });
        const t2 = randomUUID();
        expect((await store.claimItems(ids, t2, LEASE)).claimed).toHaveLength(3);
        const end = await store.settleItems(ids.map((id) => outcome(id, t2)));
        expect(end.tasks[0]).toMatchObject({ status: 'completed', succeeded: 3, failed: 0, stopReason: null, finished: true });
        // Any other stop still stops a running task.
        const other = await dispatched(2);
        expect(await store.stopTask(other.task.id, 'cancelled')).toMatchObject({ changed: true, task: { status: 'cancelled', cancelled: 2 } });
      });
    });

    describe('maintenance', () => {
      it('requeues lapsed items with attempts left and fails those on their last attempt', async () => {
        const { task, ids } = await dispatched(2, { maxAttempts: 1 });
        const other = await dispatched(1, { maxAttempts: 3 });
        await store.claimItems([...ids, ...other.ids], randomUUID(), 1);
        await new Promise((r) => setTimeout(r, 20));
        const rec = recorder();
        let requeued = 0;
        let failedIds: string[] = [];
        for (let i = 0; i < 5; i++) {
          const r = await store.recoverLapsedItems(1000, rec.enqueue);
          requeued += r.requeued;
          failedIds = failedIds.concat(r.failed.settled);
          if (r.requeued + r.failed.settled.length === 0) break;
        }
        expect(failedIds.filter((id) => ids.includes(id)).sort()).toEqual([...ids].sort());
        expect(rec.enqueued.map((w) => w.taskId)).toContain(other.task.id);
        expect(requeued).toBeGreaterThanOrEqual(1);
        expect(await store.getTask(task.id)).toMatchObject({ status: 'completed', failed: 2 });
        const [item] = (await store.listItems(other.task.id, { limit: 1 })).rows;
        expect(item).toMatchObject({ status: 'pending', error: { code: 'lease_lapsed' } });
      });

      it('recovers every item of lapsed claims, whatever their number, and only the items still running under them', async () => {
        const { task, ids } = await dispatched(30, { maxAttempts: 3 });
        // Ten claims of three; in each, one item settled and one released before the holder died.
        const tokens = Array.from({ length: 10 }, () => randomUUID());
        for (let c = 0; c < 10; c++) await store.claimItems(ids.slice(c * 3, c * 3 + 3), tokens[c]!, 1);
        await store.settleItems(tokens.map((token, c) => outcome(ids[c * 3]!, token)));
        const rec = recorder();
        await store.releaseItems(tokens.map((token, c) => ({ itemId: ids[c * 3 + 1]!, token, error: { code: 'busy', message: 'later', attempt: 1 }, delayMs: 0 })), rec.enqueue);
        await new Promise((r) => setTimeout(r, 20));
        // A few items a call: the loop goes on until a call finds nothing.
        let requeued = 0;
        for (let i = 0; i < 20; i++) {
          const r = await store.recoverLapsedItems(4, rec.enqueue);
          expect(r.failed.settled).toEqual([]);
          if (r.requeued === 0) break;
          requeued += r.requeued;
        }
        expect(requeued).toBe(10);
        // The released and the recovered items wait with one attempt used; none is left running.
        expect(await store.itemCounts(task.id)).toMatchObject({ running: 0, succeeded: 10, waitingRetry: 20 });
        expect((await store.recoverLapsedItems(1000, rec.enqueue)).requeued).toBe(0);
      });

      it('forgets the claims a worker ended, but keeps one that still holds a running item: it lapses and is recovered', async (t) => {
        if (!store.endClaims) return t.skip();
        const { task, ids } = await dispatched(3, { maxAttempts: 3 });
        const ended = randomUUID();
        const unfinished = randomUUID();
        await store.claimItems(ids.slice(0, 1), ended, 1);
        await store.claimItems(ids.slice(1), unfinished, 1);
        await store.settleItems([outcome(ids[0]!, ended), outcome(ids[1]!, unfinished)]);
        // `unfinished` is ended too, as by a worker that saw an outcome committed which the server
        // then lost: it still holds a running item, so it is kept.
        await store.endClaims([ended, unfinished, randomUUID()]); // an unknown token is no error
        await new Promise((r) => setTimeout(r, 20));
        const rec = recorder();
        expect((await store.recoverLapsedItems(1000, rec.enqueue)).requeued).toBe(1);
        expect(rec.enqueued.map((w) => w.taskId)).toEqual([task.id]);
        const [item] = (await store.listItems(task.id, { limit: 10 })).rows.filter((r) => r.id === ids[2]);
        expect(item).toMatchObject({ status: 'pending', attempts: 1, error: { code: 'lease_lapsed' } });
        expect((await store.claimItems([ids[2]!], randomUUID(), LEASE)).claimed[0]?.attempt).toBe(2);
        await store.endClaims([]);
      });

      it('lists running tasks past their deadline', async () => {
        const { task } = await dispatched(1, { deadlineAt: new Date(Date.now() - 1000) });
        expect(await store.overdueTasks(1000)).toContain(task.id);
      });

      it('recomputes drifted counters from items and finishes a task they say is done', async () => {
        const { task, ids } = await dispatched(3);
        const token = randomUUID();
        await store.claimItems(ids, token, LEASE);
        await store.settleItems(ids.map((id) => outcome(id, token)));
        await harness.tamperCounters(task.id, { succeeded: 1 });
        const result = await store.reconcile(task.id);
        expect(result?.drift).toEqual([{ field: 'succeeded', was: 1, now: 3 }]);
        // A task stuck by drift: its counters say one item is missing although every item settled.
        const stuck = await dispatched(3);
        const t2 = randomUUID();
        await store.claimItems(stuck.ids, t2, LEASE);
        await store.settleItems(stuck.ids.slice(0, 2).map((id) => outcome(id, t2)));
        await harness.tamperCounters(stuck.task.id, { total: 4 });
        const last = await store.settleItems([outcome(stuck.ids[2]!, t2)]);
        expect(last.tasks[0]).toMatchObject({ status: 'running', finished: false });
        const fixed = await store.reconcile(stuck.task.id);
        expect(fixed).toMatchObject({ drift: [{ field: 'total', was: 4, now: 3 }], finished: true, task: { status: 'completed', succeeded: 3 } });
        expect((await store.reconcile(stuck.task.id))?.finished).toBe(false);
        expect(await store.reconcile(randomUUID())).toBeNull();
      });

      it('applies the failure tolerance to the counters it recomputes, as a settle does', async () => {
        // A total drifted up hid a failure past `maxFailureRatio` from the settle (1 of 10 is not
        // over 0.3; 1 of 3 is).
        const whole = await dispatched(3, { maxFailureRatio: 0.3 });
        const t1 = randomUUID();
        await store.claimItems(whole.ids, t1, LEASE);
        await harness.tamperCounters(whole.task.id, { total: 10 });
        const settled = await store.settleItems([outcome(whole.ids[0]!, t1), outcome(whole.ids[1]!, t1), outcome(whole.ids[2]!, t1, 'failed')]);
        expect(settled.tasks[0]).toMatchObject({ status: 'running', failed: 1, overFailureLimit: false });
        expect(await store.reconcile(whole.task.id)).toMatchObject({ finished: true, task: { status: 'failed', stopReason: 'failure_threshold', total: 3, failed: 1 } });
        // With an item still pending, the task is stopping for it: the stop cancels the rest.
        const part = await dispatched(3, { maxFailureRatio: 0.3 });
        const t2 = randomUUID();
        await store.claimItems(part.ids.slice(0, 2), t2, LEASE);
        await harness.tamperCounters(part.task.id, { total: 10 });
        await store.settleItems([outcome(part.ids[0]!, t2), outcome(part.ids[1]!, t2, 'failed')]);
        expect(await store.reconcile(part.task.id)).toMatchObject({ finished: false, task: { status: 'stopping', stopReason: 'failure_threshold' } });
        expect((await store.getTask(part.task.id))?.completedAt).toBeNull();
        const stopped = await store.stopTask(part.task.id, 'failure_threshold', 'too many failures');
        expect(stopped?.task).toMatchObject({ status: 'failed', finished: true, succeeded: 1, failed: 1, cancelled: 1 });
      });

      it("leaves a running task waiting its turn behind its tenant's cap out of the quiet tasks to reconcile", async () => {
        const tenant = `capped-${randomUUID()}`;
        const tasks: string[] = [];
        for (let i = 0; i < 3; i++) tasks.push((await dispatched(1, { tenant })).task.id);
        const ours = (ids: string[]) => ids.filter((id) => tasks.includes(id)).sort();
        // Untouched for no time at all: every unfinished task is quiet (once the clock moved past them).
        let all: string[] = [];
        for (let i = 0; i < 100 && all.length < 3; i++) all = ours(await store.reconcileCandidates(0, 10_000));
        expect(all).toEqual([...tasks].sort());
        // With a cap of one running task per tenant, the one served first (priority, then id) is a candidate; the two behind it wait.
        const first = [...tasks].sort()[0]!;
        expect(ours(await store.reconcileCandidates(0, 10_000, 1))).toEqual([first]);
        expect(ours(await store.reconcileCandidates(0, 10_000, 3))).toEqual([...tasks].sort());
      });

      it('runs each fan-in once per round, under a lease only its holder renews and completes', async () => {
        const { task, ids } = await dispatched(1);
        const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
        expect(await store.claimFanIn(task.id, [kind], LEASE, a)).toBeNull(); // not finished yet
        const token = randomUUID();
        await store.claimItems(ids, token, LEASE);
        await store.settleItems([outcome(ids[0]!, token, 'failed')]);
        const claimed = await store.claimFanIn(task.id, [kind], LEASE, a);
        expect(claimed?.id).toBe(task.id);
        expect(await store.claimFanIn(task.id, [kind], LEASE, b)).toBeNull(); // leased
        expect(await store.renewFanIn(task.id, a, LEASE)).toBe(true);
        expect(await store.renewFanIn(task.id, b, LEASE)).toBe(false);
        await store.releaseFanIn(task.id, b, 0); // not b's to release
        expect(await store.claimFanIn(task.id, [kind], LEASE, b)).toBeNull();
        await store.releaseFanIn(task.id, a, 0);
        expect((await store.claimFanIn(task.id, [kind], LEASE, b))?.id).toBe(task.id);
        // a lost its lease to b: a cannot complete the round, b can, once.
        expect(await store.renewFanIn(task.id, a, LEASE)).toBe(false);
        expect(await store.completeFanIn(task.id, 1, a)).toBe(false);
        expect(await store.completeFanIn(task.id, 1, b)).toBe(true);
        expect(await store.completeFanIn(task.id, 1, b)).toBe(false);
        expect(await store.claimFanIn(task.id, [kind], LEASE, c)).toBeNull(); // done for round 1
        await retryEnded(task.id, recorder().enqueue);
        const t2 = randomUUID();
        await store.claimItems(ids, t2, LEASE);
        await store.settleItems([outcome(ids[0]!, t2)]);
        expect((await store.claimFanIn(task.id, [kind], LEASE, c))?.round).toBe(2);
      });

      it('a claim of one finished task waits for a row another writer holds, instead of passing it over', async (t) => {
        if (!harness.holdTaskRow) return t.skip();
        const task = await finishedTask();
        const held = await harness.holdTaskRow(task.id);
        let settled = false;
        const claim = store.claimFanIn(task.id, [kind], LEASE, randomUUID()).finally(() => void (settled = true));
        try {
          // Until the claim either answered or is seen waiting for the row.
          const deadline = Date.now() + 10_000;
          while (!settled && !(await held.waitedFor())) {
            if (Date.now() > deadline) throw new Error('the claim neither answered nor waited for the held row');
            await new Promise((r) => setTimeout(r, 10));
          }
          expect(settled).toBe(false);
        } finally {
          await held.release();
        }
        expect((await claim)?.id).toBe(task.id);
      });

      it('claims, completes and records as announced the endings of several tasks in one call each', async (t) => {
        if (!store.claimFanIns || !store.completeFanIns || !store.markAnnouncedMany) return t.skip();
        const [a, b] = [await finishedTask(), await finishedTask()];
        const running = (await dispatched(1)).task;
        const held = randomUUID();
        expect((await store.claimFanIn(b.id, [kind], LEASE, held))?.id).toBe(b.id); // b is leased by another
        const token = randomUUID();
        const claimed = await store.claimFanIns([a.id, b.id, running.id, randomUUID()], LEASE, token);
        expect(claimed.map((c) => c.id)).toEqual([a.id]); // not b (leased), not the running task, not an unknown id
        expect(claimed[0]).toMatchObject({ status: 'completed', round: 1, kind });
        expect(await store.claimFanIns([a.id], LEASE, randomUUID())).toEqual([]); // a is leased now
        // Only each holder's round is recorded: a with the batch's token, b not with it.
        expect(await store.completeFanIns([{ taskId: a.id, round: 1, token }, { taskId: b.id, round: 1, token }])).toEqual([a.id]);
        expect(await store.completeFanIns([{ taskId: a.id, round: 1, token }])).toEqual([]); // once
        expect(await store.completeFanIns([{ taskId: b.id, round: 1, token: held }])).toEqual([b.id]);
        expect(await store.claimFanIns([a.id, b.id], 0, randomUUID())).toEqual([]); // done for round 1
        await store.markAnnouncedMany([{ taskId: a.id, round: 1 }, { taskId: b.id, round: 1 }, { taskId: randomUUID(), round: 1 }]);
        const unannounced = await store.claimUnannounced([kind], 0, LEASE, 1000);
        expect(unannounced.map((u) => u.id)).not.toContain(a.id);
        expect(unannounced.map((u) => u.id)).not.toContain(b.id);
      });

      it('records the announcements, fan-in claims and fan-in completions of several tasks in one call', async (t) => {
        if (!store.recordEndings) return t.skip();
        const [a, b, c] = [await finishedTask(), await finishedTask(), await finishedTask()];
        const running = (await dispatched(1)).task;
        const held = randomUUID();
        expect((await store.claimFanIn(b.id, [kind], LEASE, held))?.id).toBe(b.id); // b is leased by another
        const token = randomUUID();
        const first = await store.recordEndings(
          [
            { taskId: a.id, write: 'claim_fan_in' },
            { taskId: a.id, write: 'announced', round: 1 },
            { taskId: b.id, write: 'claim_fan_in' },
            { taskId: running.id, write: 'claim_fan_in' },
            { taskId: randomUUID(), write: 'claim_fan_in' },
            { taskId: 'not-a-uuid', write: 'announced', round: 1 },
          ],
          LEASE,
          token,
        );
        // Not b (leased), not the running task, not an unknown id.
        expect(first.claimed.map((x) => x.id)).toEqual([a.id]);
        expect(first.claimed[0]).toMatchObject({ status: 'completed', round: 1, kind });
        expect(first.completed).toEqual([]);
        expect((await store.recordEndings([{ taskId: a.id, write: 'claim_fan_in' }], LEASE, randomUUID())).claimed).toEqual([]); // a is leased now
        // Only each holder's round is recorded: a with the batch's token, b not with it; c's
        // announcement goes in the same call.
        const second = await store.recordEndings(
          [
            { taskId: a.id, write: 'complete_fan_in', round: 1, token },
            { taskId: b.id, write: 'complete_fan_in', round: 1, token },
            { taskId: c.id, write: 'announced', round: 1 },
            { taskId: c.id, write: 'claim_fan_in' },
          ],
          LEASE,
          token,
        );
        expect(second.completed).toEqual([a.id]);
        expect(second.claimed.map((x) => x.id)).toEqual([c.id]);
        expect((await store.recordEndings([{ taskId: a.id, write: 'complete_fan_in', round: 1, token }], LEASE, token)).completed).toEqual([]); // once
        expect((await store.recordEndings([{ taskId: b.id, write: 'complete_fan_in', round: 1, token: held }], LEASE, token)).completed).toEqual([b.id]);
        expect((await store.recordEndings([{ taskId: a.id, write: 'claim_fan_in' }, { taskId: b.id, write: 'claim_fan_in' }], 0, randomUUID())).claimed).toEqual([]); // done for round 1
        // The lease and token a claim took are the ones the fan-in methods see.
        expect(await store.renewFanIn(c.id, token, LEASE)).toBe(true);
        expect(await store.completeFanIn(c.id, 1, token)).toBe(true);
        await store.recordEndings([{ taskId: b.id, write: 'announced', round: 1 }], LEASE, randomUUID());
        const unannounced = (await store.claimUnannounced([kind], 0, LEASE, 1000)).map((u) => u.id);
        for (const id of [a.id, b.id, c.id]) expect(unannounced).not.toContain(id);
        expect(await store.recordEndings([], LEASE, randomUUID())).toEqual({ claimed: [], completed: [] });
        // A completion and a claim of one task in one call: the claim sees the completion. Under a
        // lease that lapsed (0 ms), the holder's completion is recorded, and the claim then finds
        // the round's fan-in done instead of taking it again.
        const e = await finishedTask();
        const lapsed = randomUUID();
        expect((await store.claimFanIn(e.id, [kind], 0, lapsed))?.id).toBe(e.id);
        const both = await store.recordEndings(
          [
            { taskId: e.id, write: 'claim_fan_in' },
            { taskId: e.id, write: 'complete_fan_in', round: 1, token: lapsed },
          ],
          LEASE,
          randomUUID(),
        );
        expect(both).toEqual({ claimed: [], completed: [e.id] });
        expect(await store.claimFanIn(e.id, [kind], LEASE, randomUUID())).toBeNull(); // done, and nothing left leased
        // Claims racing for one fan-in: one wins (each reads the row as it locked it).
        const d = await finishedTask();
        const raced = await Promise.all(Array.from({ length: 8 }, () => store.recordEndings!([{ taskId: d.id, write: 'claim_fan_in' }], LEASE, randomUUID())));
        expect(raced.flatMap((r) => r.claimed)).toHaveLength(1);
      });

      it('gives an ending nobody recorded as announced to one maintenance pass, after the grace', async () => {
        const { task, ids } = await dispatched(1);
        const token = randomUUID();
        await store.claimItems(ids, token, LEASE);
        await store.settleItems([outcome(ids[0]!, token)]);
        const mine = async (graceMs: number) => (await store.claimUnannounced([kind], graceMs, LEASE, 1000)).filter((t) => t.id === task.id);
        expect(await mine(60_000)).toEqual([]); // the finishing process has time to announce it
        const [due] = await mine(0);
        expect(due).toMatchObject({ id: task.id, status: 'completed', round: 1, succeeded: 1 });
        expect(await mine(0)).toEqual([]); // claimed: another pass does not announce it too
        await store.markAnnounced(task.id, 1);
        // Announced endings are never claimed again; a new round's ending is.
        await store.settleItems([]);
        expect(await store.claimUnannounced([kind], 0, 0, 1000).then((l) => l.filter((t) => t.id === task.id))).toEqual([]);
      });
    });

    describe('global limits', () => {
      it('never gives more holders than the limit, however the takes race', async () => {
        const name = `lim_${randomUUID().slice(0, 8)}`;
        const holders = Array.from({ length: 40 }, () => randomUUID());
        const results = await Promise.all(holders.map((h) => store.acquireSlot(name, 3, h, LEASE)));
        expect(results.filter(Boolean)).toHaveLength(3);
        expect(await store.slotHolders(name)).toBe(3);
        const winner = holders[results.indexOf(true)]!;
        expect(await store.renewSlot(name, winner, LEASE)).toBe(true);
        await store.releaseSlot(name, winner);
        expect(await store.renewSlot(name, winner, LEASE)).toBe(false);
        expect(await store.slotHolders(name)).toBe(2);
        expect(await store.acquireSlot(name, 3, randomUUID(), LEASE)).toBe(true);
        expect(await store.acquireSlot(name, 3, randomUUID(), LEASE)).toBe(false);
      });

      it("recovers a dead holder's slot after its lease, and not before", async () => {
        const live = `lim_${randomUUID().slice(0, 8)}`;
        expect(await store.acquireSlot(live, 1, randomUUID(), LEASE)).toBe(true);
        expect(await store.acquireSlot(live, 1, randomUUID(), LEASE)).toBe(false);
        // A holder that stops renewing (a short lease stands for a dead process): its slot comes back.
        const dead = `lim_${randomUUID().slice(0, 8)}`;
        expect(await store.acquireSlot(dead, 1, randomUUID(), 200)).toBe(true);
        const deadline = Date.now() + 10_000;
        let taken = false;
        while (!taken && Date.now() < deadline) {
          taken = await store.acquireSlot(dead, 1, randomUUID(), LEASE);
          if (!taken) await new Promise((r) => setTimeout(r, 25));
        }
        expect(taken).toBe(true);
      });

      it('allows at most `limit` takes per interval', async () => {
        const name = `rate_${randomUUID().slice(0, 8)}`;
        const takes = await Promise.all(Array.from({ length: 8 }, () => store.takeRateSlot(name, 5, 60_000)));
        expect(takes.filter((t) => 'takenAt' in t)).toHaveLength(5);
        // Racing takers may be told to look again at once (a slot was locked, not yet taken);
        // once the takes settle, the wait is until the first slot frees.
        const after = await store.takeRateSlot(name, 5, 60_000);
        expect('waitMs' in after && after.waitMs).toBeGreaterThan(50_000);
      });
    });

    describe('idempotent submits', () => {
      it('creates one task per key, kind and tenant; the same key with another request is a conflict', async () => {
        const tenant = `idem-${randomUUID()}`;
        const key = `key-${randomUUID()}`;
        const make = (hash: string, t: string | null = tenant) =>
          store.createTask({ kind, tenant: t, input: { a: 1 }, maxAttempts: 1, idempotencyKey: key, requestHash: hash, summary: 'one thing' }, async () => {});
        const [a, b] = await Promise.all([make('h1'), make('h1')]);
        expect(a.id).toBe(b.id);
        expect([a.replayed, b.replayed].sort()).toEqual([false, true]);
        expect(a.summary).toBe('one thing');
        await expect(make('h2')).rejects.toMatchObject({ code: 'conflict', field: 'idempotencyKey' });
        // The key is per tenant (no tenant counts as one too).
        const other = await make('h1', null);
        expect(other.id).not.toBe(a.id);
        expect((await make('h1', null)).id).toBe(other.id);
        expect((await store.listTasks({ tenant, limit: 10 })).rows).toHaveLength(1);
        // The task of a key, found by kind, tenant and key (what a submit asks before checking the input).
        if (store.keyedTask) {
          expect(await store.keyedTask(kind, tenant, key)).toBe(a.id);
          expect(await store.keyedTask(kind, null, key)).toBe(other.id);
          expect(await store.keyedTask(kind, `${tenant}-other`, key)).toBeNull();
          expect(await store.keyedTask(`${kind}_other`, tenant, key)).toBeNull();
          expect(await store.keyedTask(kind, tenant, `${key}-unused`)).toBeNull();
        }
      });
    });

    describe('reading for people', () => {
      it('lists by statuses, id prefix and archive state, counts by status, archives and deletes finished tasks only', async () => {
        const tenant = `people-${randomUUID()}`;
        const running = await dispatched(2, { tenant });
        const done = await dispatched(1, { tenant });
        const token = randomUUID();
        await store.claimItems(done.ids, token, LEASE);
        await store.settleItems([outcome(done.ids[0]!, token)]);
        const ids = async (q: Partial<Parameters<FanoutStore['listTasks']>[0]>) => (await store.listTasks({ tenant, limit: 10, ...q })).rows.map((t) => t.id);
        expect(await ids({ statuses: ['queued', 'running', 'stopping'] })).toEqual([running.task.id]);
        expect(await ids({ statuses: ['completed'] })).toEqual([done.task.id]);
        expect(await ids({ idPrefix: done.task.id.slice(0, 30) })).toEqual([done.task.id]);
        await expect(store.listTasks({ tenant, limit: 10, idPrefix: "x' OR 1=1" })).rejects.toMatchObject({ code: 'invalid_argument' });

        await expect(store.archiveTask(running.task.id)).rejects.toMatchObject({ code: 'conflict' });
        await expect(store.deleteTask(running.task.id)).rejects.toMatchObject({ code: 'conflict' });
        await expect(store.archiveTask(randomUUID())).rejects.toMatchObject({ code: 'not_found' });
        const archived = await store.archiveTask(done.task.id);
        expect(archived.archivedAt).toBeInstanceOf(Date);
        expect(await ids({ archived: false })).toEqual([running.task.id]);
        expect(await ids({ archived: true })).toEqual([done.task.id]);
        const summary = await store.taskSummary({ kind, tenant });
        expect(summary).toEqual({ byStatus: { queued: 0, running: 1, stopping: 0, completed: 0, failed: 0, cancelled: 0 }, archived: 1 });
        // Only some statuses (the unfinished, as the task gauges read them at every scrape).
        const unfinished = await store.taskSummary({ kind, tenant, statuses: ['queued', 'running', 'stopping'] });
        expect(unfinished.byStatus).toEqual({ queued: 0, running: 1, stopping: 0, completed: 0, failed: 0, cancelled: 0 });
        await store.appendItemLogs([{ taskId: done.task.id, itemId: done.ids[0]!, attempt: 1, at: new Date(), message: 'kept' }]);
        // Not deleted (nor marked for it) before its ending was announced and its fan-in ran: a
        // refusal that passes, a moment later.
        const refusals = async () =>
          Promise.all([
            store.deleteTask(done.task.id).then(() => null, (error: unknown) => error as FanoutError),
            ...(store.markPurged ? [store.markPurged(done.task.id, { token: randomUUID(), ms: LEASE }).then(() => null, (error: unknown) => error as FanoutError)] : []),
          ]);
        for (const refused of await refusals()) {
          expect(refused).toMatchObject({ code: 'conflict', field: 'taskId', message: expect.stringContaining('its ending is still being announced') });
          expect(refused!.retryAfterMs).toBeGreaterThan(0);
        }
        await store.markAnnounced(done.task.id, 1);
        const fanIn = randomUUID();
        expect(await store.claimFanIn(done.task.id, [kind], LEASE, fanIn)).toMatchObject({ id: done.task.id });
        // Its fan-in runs: the delete waits for it (whatever the time since the end).
        for (const refused of await refusals()) {
          expect(refused).toMatchObject({ code: 'conflict', message: expect.stringContaining('its fan-in is running') });
          expect(refused!.retryAfterMs).toBeGreaterThanOrEqual(1000);
        }
        expect(await store.completeFanIn(done.task.id, 1, fanIn)).toBe(true);
        // Marked purged before an app's purge hook runs: a finished task only, and never retried after.
        if (store.markPurged) {
          const lease = () => ({ token: randomUUID(), ms: LEASE });
          await expect(store.markPurged(running.task.id, lease())).rejects.toMatchObject({ code: 'conflict' });
          await expect(store.markPurged(randomUUID(), lease())).rejects.toMatchObject({ code: 'not_found' });
          await store.markPurged(done.task.id, lease());
          // Held by that delete: another is refused while it holds it, told when to try again (when
          // the lease runs out at the latest).
          const refused = await store.markPurged(done.task.id, lease()).then(() => null, (error: unknown) => error as FanoutError);
          expect(refused).toMatchObject({ code: 'conflict', field: 'taskId' });
          expect(refused!.retryAfterMs).toBeGreaterThanOrEqual(1000);
          expect(refused!.retryAfterMs).toBeLessThanOrEqual(Math.max(1000, LEASE));
          expect((await store.getTask(done.task.id))!.purgedAt).toBeInstanceOf(Date);
          expect((await store.getTask(running.task.id))!.purgedAt).toBeNull();
        }
        await store.deleteTask(done.task.id);
        expect(await store.getTask(done.task.id)).toBeNull();
        expect((await store.listItems(done.task.id, { limit: 10 })).rows).toEqual([]);
        expect(await store.itemLogs(done.task.id, done.ids[0]!, 10)).toEqual([]);
        await expect(store.deleteTask(done.task.id)).rejects.toMatchObject({ code: 'not_found' });
      });

      it('retention: purges finished tasks of the given kinds; with a lease, holds their end for the purge hook, ended by the holder only', async () => {
        if (!store.purgeFinished || !store.finishPurge || !store.holdPurge) return;
        const hooked = `purge_${randomUUID().slice(0, 8)}`;
        const plain = `purge_${randomUUID().slice(0, 8)}`;
        const finished = async (n: number, k: string) => {
          const d = await dispatched(n, { kind: k });
          const token = randomUUID();
          await store.claimItems(d.ids, token, LEASE);
          await store.settleItems(d.ids.map((id) => outcome(id, token)));
          await endingDelivered(d.task.id);
          return d.task.id;
        };
        const a = await finished(3, hooked);
        const b = await finished(2, plain);
        const lease = () => ({ token: randomUUID(), ms: 60_000 });
        // (olderThanMs 0: every task finished before the batch is due.)
        const first = lease();
        expect(await store.purgeFinished(0, 1000, [hooked], first)).toEqual({ taskId: a, deleted: 3, purged: true, tasks: [a], kinds: [hooked] });
        expect((await store.getTask(a))!.purgedAt).toBeInstanceOf(Date);
        expect(await itemIds(a)).toEqual([]);
        expect(await itemIds(b)).toHaveLength(2);
        // Held: other batches pass it over, and only the holder ends it.
        expect(await store.purgeFinished(0, 1000, [hooked], lease())).toMatchObject({ taskId: null });
        expect(await store.finishPurge([a], randomUUID())).toEqual([]);
        // Let go (its hook failed, or its process left it): taken up again by another holder; the first can no longer end it.
        expect(await store.holdPurge([a], first.token, 0)).toEqual([a]);
        const second = lease();
        expect(await store.purgeFinished(0, 1000, [hooked], second)).toEqual({ taskId: a, deleted: 0, purged: true, tasks: [a], kinds: [hooked] });
        expect(await store.finishPurge([a], first.token)).toEqual([]);
        expect(await store.holdPurge([a], first.token, 60_000)).toEqual([]);
        expect(await store.finishPurge([a], second.token)).toEqual([a]);
        expect(await store.purgeFinished(0, 1000, [hooked], lease())).toMatchObject({ taskId: null });
        // Without a lease, the batch ends the purge itself.
        expect(await store.purgeFinished(0, 1000, [plain])).toMatchObject({ taskId: b, purged: true, tasks: [b], kinds: [plain] });
        expect(await store.purgeFinished(0, 1000, [plain])).toMatchObject({ taskId: null });
        expect((await store.getTask(b))!.purgedAt).toBeInstanceOf(Date);
        // Its counters are all that is left of its items: a reconcile keeps them.
        expect(await store.reconcile(b)).toMatchObject({ taskId: b, drift: [], finished: false, task: { total: 2, succeeded: 2 } });
        expect(await store.getTask(b)).toMatchObject({ status: 'completed', total: 2, succeeded: 2 });
        // A task a delete holds (markPurged) is passed over by retention until the lease lapses.
        if (store.markPurged) {
          const c = await finished(1, hooked);
          const mark = lease();
          await store.markPurged(c, mark);
          expect(await store.purgeFinished(0, 1000, [hooked], lease())).toMatchObject({ taskId: null });
          expect(await store.holdPurge([c], mark.token, 0)).toEqual([c]);
          expect(await store.purgeFinished(0, 1000, [hooked], lease())).toMatchObject({ taskId: c, deleted: 1, purged: true });
          await store.deleteTask(c);
        }
      });

      it('counts items by state from the rows: queued, waiting for a retry (with the soonest retry), running, settled, retryable failures', async () => {
        const { task, ids, rec } = await dispatched(6);
        const token = randomUUID();
        await store.claimItems(ids.slice(0, 5), token, LEASE);
        await store.settleItems([
          outcome(ids[0]!, token),
          { itemId: ids[1]!, token, status: 'failed', error: { code: 'busy', message: 'out of attempts', retryable: true } },
          { itemId: ids[2]!, token, status: 'failed', error: { code: 'corrupt', message: 'bad input', retryable: false } },
        ]);
        await store.releaseItems([{ itemId: ids[3]!, token, error: { code: 'busy', message: 'later', attempt: 1 }, delayMs: 60_000 }], rec.enqueue);
        const counts = await store.itemCounts(task.id);
        expect(counts).toMatchObject({ total: 6, queued: 1, waitingRetry: 1, running: 1, succeeded: 1, failed: 2, retryableFailed: 1, cancelled: 0 });
        expect(counts.nextRetryAt!.getTime() - Date.now()).toBeGreaterThan(50_000);
        const waiting = await store.listItems(task.id, { status: 'waiting', limit: 10 });
        expect(waiting.rows.map((i) => i.id)).toEqual([ids[3]]);
        expect(waiting.rows[0]!.retryAt).toBeInstanceOf(Date);
        expect(await store.failureGroups(task.id)).toEqual([
          { code: 'busy', count: 1, retryable: 1, message: 'out of attempts' },
          { code: 'corrupt', count: 1, retryable: 0, message: 'bad input' },
        ]);
      });

      it('retries only retryable failures, or chosen items, and records where the round began', async () => {
        const { task, ids } = await dispatched(4);
        const token = randomUUID();
        await store.claimItems(ids, token, LEASE);
        await store.settleItems([
          outcome(ids[0]!, token),
          { itemId: ids[1]!, token, status: 'failed', error: { code: 'busy', message: 'x', retryable: true } },
          { itemId: ids[2]!, token, status: 'failed', error: { code: 'corrupt', message: 'x', retryable: false } },
          { itemId: ids[3]!, token, status: 'failed', error: { code: 'corrupt', message: 'x', retryable: false } },
        ]);
        const rec = recorder();
        const retried = await retryEnded(task.id, rec.enqueue, { retryableOnly: true });
        expect(retried.retried).toBe(1);
        expect(rec.enqueued).toEqual([{ taskId: task.id, kind, tenant: null }]);
        expect(retried.task).toMatchObject({ round: 2, status: 'running', failed: 2, roundSettledAtStart: 3 });
        expect(retried.task.roundStartedAt).toBeInstanceOf(Date);
        const t2 = randomUUID();
        await store.claimItems([ids[1]!], t2, LEASE);
        await store.settleItems([outcome(ids[1]!, t2)]);
        await expect(retryEnded(task.id, rec.enqueue, { retryableOnly: true })).rejects.toMatchObject({ code: 'conflict' });
        await expect(retryEnded(task.id, rec.enqueue, { itemIds: [ids[0]!] })).rejects.toMatchObject({ code: 'conflict' });
        // An id that is no item of the task is missing, not in the wrong state.
        await expect(retryEnded(task.id, rec.enqueue, { itemIds: [randomUUID()] })).rejects.toMatchObject({ code: 'not_found', field: 'itemId' });
        await expect(retryEnded(task.id, rec.enqueue, { itemIds: [ids[2]!, randomUUID()] })).rejects.toMatchObject({ code: 'not_found', field: 'itemId' });
        // One item named twice (once in capitals) is one item.
        const one = await retryEnded(task.id, rec.enqueue, { itemIds: [ids[2]!, ids[2]!.toUpperCase()] });
        expect(one).toMatchObject({ retried: 1, task: { round: 3, failed: 1, roundSettledAtStart: 3 } });
      });

      it('stores item log lines in order and reads an item’s lines only', async () => {
        const { task, ids } = await dispatched(2);
        const at = new Date();
        await store.appendItemLogs([
          ...Array.from({ length: 5 }, (_, i) => ({ taskId: task.id, itemId: ids[0]!, attempt: 1, at, message: `line ${i}`, data: { i } })),
          { taskId: task.id, itemId: ids[1]!, attempt: 2, at, message: "other'); DROP TABLE fanout_item; --" },
          { taskId: randomUUID(), itemId: ids[1]!, attempt: 1, at, message: 'a task that is gone' },
        ]);
        const lines = await store.itemLogs(task.id, ids[0]!, 10);
        expect(lines.map((l) => [l.message, l.data])).toEqual(Array.from({ length: 5 }, (_, i) => [`line ${i}`, { i }]));
        expect(await store.itemLogs(task.id, ids[0]!, 2)).toHaveLength(2);
        expect((await store.itemLogs(task.id, ids[1]!, 10)).map((l) => [l.attempt, l.message])).toEqual([[2, "other'); DROP TABLE fanout_item; --"]]);
        expect(await store.itemLogs(randomUUID(), ids[0]!, 10)).toEqual([]);
        // A line whose content the database refuses (half a surrogate pair, which jsonb cannot hold)
        // fails its batch as invalid_argument, so the caller can store the others line by line.
        await expect(store.appendItemLogs([{ taskId: task.id, itemId: ids[0]!, attempt: 1, at, message: 'refused', data: { s: '\uD800' } }])).rejects.toMatchObject({ code: 'invalid_argument' });
      });

      it('gives a live view the unfinished tasks of a tenant, and those changed since a moment', async () => {
        const tenant = `live-${randomUUID()}`;
        const before = new Date(Date.now() - 1000);
        const open = await dispatched(1, { tenant });
        const done = await dispatched(1, { tenant });
        const token = randomUUID();
        await store.claimItems(done.ids, token, LEASE);
        await store.settleItems([outcome(done.ids[0]!, token)]);
        await newTask({ tenant: `${tenant}-other` });
        const live = await store.liveTaskCounts({ tenant, kinds: [kind], since: null, limit: 10 });
        expect(live.map((t) => t.id)).toEqual([open.task.id]);
        const since = await store.liveTaskCounts({ tenant, kinds: [kind], since: before, limit: 10 });
        expect(since.map((t) => t.id).sort()).toEqual([open.task.id, done.task.id].sort());
        expect(since.find((t) => t.id === done.task.id)).toMatchObject({ status: 'completed', succeeded: 1, kind, tenant });
        expect(await store.liveTaskCounts({ tenant, kinds: ['another_kind'], since: before, limit: 10 })).toEqual([]);
        // Without the unfinished ones: only those changed since (none since a moment to come, where
        // the unfinished one is given by default).
        expect((await store.liveTaskCounts({ tenant, kinds: [kind], since: before, limit: 10, unfinished: false })).map((t) => t.id).sort()).toEqual([open.task.id, done.task.id].sort());
        expect(await store.liveTaskCounts({ tenant, kinds: [kind], since: new Date(Date.now() + 60_000), limit: 10, unfinished: false })).toEqual([]);
        expect((await store.liveTaskCounts({ tenant, kinds: [kind], since: new Date(Date.now() + 60_000), limit: 10 })).map((t) => t.id)).toEqual([open.task.id]);
      });
    });

    describe('operations', () => {
      it('records presence and adds samples of a bucket up, histograms included; a stopped process leaves', async () => {
        const k = `${kind}_ops`;
        const worker = { id: randomUUID(), role: 'worker', host: 'h', pid: 42, kinds: [k], concurrency: 8, inFlight: 3, startedAt: new Date(), stats: { recoveries: { lapsedRequeued: 1 } } };
        const bucket = new Date(Math.floor(Date.now() / 10_000) * 10_000);
        await store.reportPresence(worker, [{ bucket, kind: k, settled: 5, failed: 1, durations: [1, 2, 2] }]);
        await store.reportPresence({ ...worker, inFlight: 1 }, [{ bucket, kind: k, settled: 2, failed: 0, durations: [0, 1, 1] }]);
        const other = { ...worker, id: randomUUID(), pid: 43 };
        await store.reportPresence(other, [{ bucket, kind: k, settled: 1, failed: 1, durations: [1, 0, 0] }]);
        const workers = (await store.workers([k], 60_000)).sort((a, b) => a.pid - b.pid);
        expect(workers.map((w) => [w.pid, w.inFlight])).toEqual([
          [42, 1],
          [43, 3],
        ]);
        expect(workers[0]!.stats).toEqual({ recoveries: { lapsedRequeued: 1 } });
        expect(await store.workers(['nobody'], 60_000)).toEqual([]);
        const points = await store.metrics([k], new Date(bucket.getTime() - 1));
        expect(points).toEqual([{ bucket, settled: 8, failed: 2, durations: [2, 3, 3] }]);
        await store.removeWorker(other.id);
        expect((await store.workers([k], 60_000)).map((w) => w.pid)).toEqual([42]);
      });

      it('shows how many slots of each limit are busy', async () => {
        const name = `usage_${randomUUID().slice(0, 8)}`;
        await store.acquireSlot(name, 3, randomUUID(), LEASE);
        await store.acquireSlot(name, 3, randomUUID(), LEASE);
        expect((await store.slotUsage()).find((u) => u.name === name)).toEqual({ name, slots: 3, busy: 2 });
      });
    });
  });
}
