import { randomUUID } from 'node:crypto';
import { defineFanout } from '@fanout/core';
import { migrationsDir } from '@fanout/prisma-adapter';
import { createTestDatabase } from '@fanout/testdb';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAppRuntime } from './fixtures/app-runtime.ts';
import { testDefinition } from './fixtures/definitions.ts';
import { waitFor } from './fixtures/harness.ts';

const DAY = 86_400_000;

describe('retention', () => {
  it('deletes the items and logs of tasks finished past retention in bounded batches, keeps their rows and counts, and refuses to retry them', async () => {
    await using db = await createTestDatabase({ migrations: [migrationsDir] });
    const app = createAppRuntime({
      databaseUrl: db.url,
      definitions: [testDefinition()],
      worker: { concurrency: 20 },
      // Passes run when the test asks (runMaintenance), not on their own.
      maintenance: { intervalMs: 3_600_000, retentionMs: DAY },
    });
    try {
      await app.fanout.start();
      const old = await app.fanout.submit('test_batch', { count: 2500, every: 500, special: { permanent: true } });
      const recent = await app.fanout.submit('test_batch', { count: 10 });
      const settled = async (id: string) => {
        const [row] = await app.prisma.$queryRaw<{ ready: boolean }[]>`
          SELECT status = 'completed' AND announced_round >= round AND fanin_round >= round AS ready FROM fanout_task WHERE id = ${id}::uuid`;
        return row?.ready;
      };
      await waitFor(async () => (await settled(old.id)) && (await settled(recent.id)), { timeoutMs: 60_000, message: 'both tasks finished, announced and fanned in' });
      await app.prisma.$executeRaw`UPDATE fanout_task SET completed_at = now() - interval '2 days' WHERE id = ${old.id}::uuid`;
      const itemsOf = async (id: string) => (await app.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM fanout_item WHERE task_id = ${id}::uuid`)[0]!.n;

      // Past its retention (less a margin), a task is no longer retried: its items are about to go.
      await expect(app.fanout.retryFailed(old.id)).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('retention') });

      // One batch deletes at most its limit.
      const first = await app.fanout.store.purgeFinished!(DAY, 1000, ['test_batch']);
      expect(first).toMatchObject({ taskId: old.id, purged: false, tasks: [old.id] });
      expect(await itemsOf(old.id)).toBe(1500);
      // Its details are gone from the first batch: they are not served half deleted meanwhile.
      expect((await app.fanout.getTask(old.id))!.purgedAt).toBeInstanceOf(Date);
      await expect(app.fanout.retryFailed(old.id)).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('deleted by retention') });
      // The store refuses it too, under the task's lock (a retry that read the task before the
      // first batch cannot reopen a task whose items are going).
      await expect(app.fanout.store.retryFailed(old.id, async () => {})).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('deleted by retention') });

      await app.fanout.runMaintenance();
      // Every step of the pass was timed into the process's stats (its presence report).
      const steps = app.fanout.stats.snapshot().maintenance as Record<string, { passes: number; maxMs: number }>;
      expect(Object.keys(steps).sort()).toEqual(['announce', 'fanIn', 'overdue', 'reconcile', 'recover', 'retention', 'vacuum']);
      expect(steps.retention!.passes).toBeGreaterThanOrEqual(1);
      expect(steps.retention!.maxMs).toBeGreaterThan(0);
      expect(await itemsOf(old.id)).toBe(0);
      expect(await itemsOf(recent.id)).toBe(10);
      const purged = (await app.fanout.getTask(old.id))!;
      expect(purged).toMatchObject({ status: 'completed', total: 2500, succeeded: 2495, failed: 5, cancelled: 0 });
      expect(purged.purgedAt).toBeInstanceOf(Date);
      expect((await app.fanout.getTask(recent.id))!.purgedAt).toBeNull();
      await expect(app.fanout.retryFailed(old.id)).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('deleted by retention') });
      // Nothing left to do: a pass finds no task due.
      expect(await app.fanout.store.purgeFinished!(DAY, 1000, ['test_batch'])).toEqual({ taskId: null, deleted: 0, purged: false, tasks: [], kinds: [] });
    } finally {
      await app.close();
    }
  }, 90_000);

  it('keeps up with many small tasks (they share a batch), and leaves the tasks of kinds it does not run to their own processes', async () => {
    await using db = await createTestDatabase({ migrations: [migrationsDir] });
    const app = createAppRuntime({ databaseUrl: db.url, definitions: [testDefinition()], maintenance: { intervalMs: 3_600_000, retentionMs: DAY } });
    try {
      await app.fanout.start({ managers: false, children: false, maintenance: false });
      // 1,000 finished tasks of 5 items each, two days old, as a busy platform leaves them; and one
      // of a kind this process does not run, whose fan-in has not run yet.
      await app.prisma.$executeRaw`
        WITH tasks AS (
          INSERT INTO fanout_task (id, kind, tenant, input, status, total, succeeded, round, announced_round, fanin_round, started_at, completed_at, dispatched_at)
          SELECT gen_random_uuid(), CASE WHEN g = 0 THEN 'other_kind' ELSE 'test_batch' END, 't', '{}', 'completed', 5, 5, 1, 1,
                 CASE WHEN g = 0 THEN 0 ELSE 1 END, now() - interval '3 days', now() - interval '2 days' + g * interval '1 millisecond', now() - interval '3 days'
          FROM generate_series(0, 1000) g RETURNING id)
        INSERT INTO fanout_item (id, task_id, seq, key, snapshot, status, attempts)
        SELECT gen_random_uuid(), tasks.id, s, 'k' || s, '{}', 'succeeded', 1 FROM tasks, generate_series(0, 4) s`;
      // A pass goes on for up to a second: one or two passes, where five tasks a pass took 200.
      let passes = 0;
      const left = async () => (await app.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM fanout_task WHERE kind = 'test_batch' AND (purged_at IS NULL OR purging)`)[0]!.n;
      do {
        await app.fanout.runMaintenance();
        passes++;
      } while ((await left()) > 0 && passes < 20);
      console.log(`retention: 1,000 small tasks purged in ${passes} pass(es)`);
      expect(passes).toBeLessThanOrEqual(3);
      const [row] = await app.prisma.$queryRaw<{ purged: number; purging: number; items: number; other_items: number }[]>`
        SELECT count(*) FILTER (WHERE kind = 'test_batch' AND purged_at IS NOT NULL)::int AS purged,
               count(*) FILTER (WHERE purging)::int AS purging,
               (SELECT count(*)::int FROM fanout_item i JOIN fanout_task t ON t.id = i.task_id WHERE t.kind = 'test_batch') AS items,
               (SELECT count(*)::int FROM fanout_item i JOIN fanout_task t ON t.id = i.task_id WHERE t.kind = 'other_kind') AS other_items
        FROM fanout_task`;
      expect(row).toEqual({ purged: 1000, purging: 0, items: 0, other_items: 5 });
    } finally {
      await app.close();
    }
  });

  it("runs the definition's purge hook on what the app keeps of a task once its details are gone, again until it succeeds, without holding up other definitions; a delete runs it first", async () => {
    await using db = await createTestDatabase({ migrations: [migrationsDir] });
    // The app's own rows, keyed by task, as the ASL app keeps its extractions.
    const hook = { failing: true, calls: [] as string[][] };
    let app: ReturnType<typeof createAppRuntime>;
    const withHook = {
      ...testDefinition(),
      async onPurge(taskIds: readonly string[]) {
        hook.calls.push([...taskIds].sort());
        if (hook.failing) throw new Error('the app database is away');
        await app.prisma.$executeRaw`DELETE FROM app_row WHERE task_id = ANY(${[...taskIds]}::uuid[])`;
      },
    };
    const other = defineFanout({ name: 'other_batch', input: z.object({}), item: z.object({}), listItems: () => [], runItem: () => null });
    app = createAppRuntime({ databaseUrl: db.url, definitions: [withHook, other], maintenance: { intervalMs: 3_600_000, retentionMs: DAY } });
    const errors: string[] = [];
    app.fanout.events.on('error', (event) => {
      errors.push(event.context);
    });
    try {
      await app.fanout.start({ managers: false, children: false, maintenance: false });
      await app.prisma.$executeRaw`CREATE TABLE app_row (task_id uuid NOT NULL, n int NOT NULL)`;
      // Three tasks of the definition with a hook and two of the other, two days old; and one of
      // the first, finished a minute ago (not due), for the delete.
      const tasks = await app.prisma.$queryRaw<{ id: string; kind: string; due: boolean }[]>`
        WITH tasks AS (
          INSERT INTO fanout_task (id, kind, tenant, input, status, total, succeeded, round, announced_round, fanin_round, started_at, completed_at, dispatched_at)
          SELECT gen_random_uuid(), CASE WHEN g < 3 OR g = 5 THEN 'test_batch' ELSE 'other_batch' END, 't', '{}', 'completed', 5, 5, 1, 1, 1,
                 now() - interval '3 days', CASE WHEN g = 5 THEN now() - interval '1 minute' ELSE now() - interval '2 days' + g * interval '1 millisecond' END, now() - interval '3 days'
          FROM generate_series(0, 5) g RETURNING id, kind, completed_at),
        items AS (
          INSERT INTO fanout_item (id, task_id, seq, key, snapshot, status, attempts)
          SELECT gen_random_uuid(), tasks.id, s, 'k' || s, '{}', 'succeeded', 1 FROM tasks, generate_series(0, 4) s RETURNING 1)
        SELECT id::text, kind, completed_at < now() - interval '1 day' AS due FROM tasks ORDER BY completed_at`;
      const mine = tasks.filter((t) => t.kind === 'test_batch' && t.due).map((t) => t.id).sort();
      const fresh = tasks.find((t) => !t.due)!.id;
      await app.prisma.$executeRaw`INSERT INTO app_row SELECT id, n FROM unnest(${[...mine, fresh]}::uuid[]) id, generate_series(1, 3) n`;
      const state = async () =>
        (
          await app.prisma.$queryRaw<{ kind: string; purged: number; purging: number; items: number }[]>`
            SELECT t.kind, count(*) FILTER (WHERE t.purged_at IS NOT NULL)::int AS purged, count(*) FILTER (WHERE t.purging)::int AS purging,
                   coalesce(sum((SELECT count(*) FROM fanout_item i WHERE i.task_id = t.id)), 0)::int AS items
            FROM fanout_task t WHERE t.completed_at < now() - interval '1 day' GROUP BY t.kind ORDER BY t.kind`
        ).map((r) => ({ ...r }));
      const appRows = async (ids: string[]) => (await app.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM app_row WHERE task_id = ANY(${ids}::uuid[])`)[0]!.n;

      // The hook fails: the items are gone (the tasks answer as purged), but the tasks stay under
      // way, and the other definition's tasks are purged all the same.
      await app.fanout.runMaintenance();
      expect(hook.calls).toEqual([mine]);
      expect(await state()).toEqual([
        { kind: 'other_batch', purged: 2, purging: 0, items: 0 },
        { kind: 'test_batch', purged: 3, purging: 3, items: 0 },
      ]);
      expect(await appRows(mine)).toBe(9);
      expect(errors).toEqual(['the purge hook of test_batch']);
      // Held back for a while: the next pass does not call it again at once.
      await app.fanout.runMaintenance();
      expect(hook.calls).toHaveLength(1);

      // Once the hook works, a later pass takes the tasks up again and finishes them.
      hook.failing = false;
      await waitFor(
        async () => {
          await app.fanout.runMaintenance();
          return (await state())[1]!.purging === 0;
        },
        { timeoutMs: 30_000, message: 'the held tasks purged once the hook works' },
      );
      expect(hook.calls.at(-1)).toEqual(mine);
      expect(await appRows(mine)).toBe(0);
      expect(await appRows([fresh])).toBe(3);

      // A delete runs the hook before the task goes; when the hook fails, the task stays, marked
      // purged (so never retried), and its rows with it.
      hook.failing = true;
      await expect(app.fanout.deleteTask(fresh)).rejects.toThrow('the app database is away');
      expect((await app.fanout.getTask(fresh))!.purgedAt).toBeInstanceOf(Date);
      await expect(app.fanout.retryFailed(fresh)).rejects.toMatchObject({ code: 'conflict' });
      expect(await appRows([fresh])).toBe(3);
      hook.failing = false;
      await app.fanout.deleteTask(fresh);
      expect(await app.fanout.getTask(fresh)).toBeNull();
      expect(await appRows([fresh])).toBe(0);
      expect(hook.calls.at(-1)).toEqual([fresh]);
      // A task that runs is not deleted, and its hook is not run.
      const calls = hook.calls.length;
      const [running] = await app.prisma.$queryRaw<{ id: string }[]>`
        INSERT INTO fanout_task (id, kind, tenant, input, status, total, round, started_at)
        VALUES (gen_random_uuid(), 'test_batch', 't', '{}', 'running', 5, 1, now()) RETURNING id::text`;
      await expect(app.fanout.deleteTask(running!.id)).rejects.toMatchObject({ code: 'conflict' });
      expect(hook.calls).toHaveLength(calls);
      expect((await app.fanout.getTask(running!.id))!.purgedAt).toBeNull();
    } finally {
      await app.close();
    }
  }, 60_000);

  it("deletes a task only after its ending: a delete waits for a fan-in that runs, takes no fan-in up once begun, and goes a bounded batch at a time", async () => {
    await using db = await createTestDatabase({ migrations: [migrationsDir] });
    let fanInStarted!: () => void;
    const fanInRunning = new Promise<void>((resolve) => (fanInStarted = resolve));
    let finishFanIn!: () => void;
    const fanInMayEnd = new Promise<void>((resolve) => (finishFanIn = resolve));
    const order: string[] = [];
    const app = createAppRuntime({
      databaseUrl: db.url,
      definitions: [
        testDefinition({
          onFinish: async () => {
            fanInStarted();
            await fanInMayEnd;
            order.push('fan-in ran');
          },
        }),
      ],
      worker: { concurrency: 20 },
      maintenance: { intervalMs: 3_600_000 },
    });
    try {
      await app.fanout.start();
      // 5,000 items, each with a log line: more than a statement of the delete takes.
      const task = await app.fanout.submit('test_batch', { count: 5000 });
      await fanInRunning;
      await app.prisma.$executeRaw`
        INSERT INTO fanout_item_log (task_id, item_id, attempt, at, message) SELECT task_id, id, 1, now(), 'a line' FROM fanout_item WHERE task_id = ${task.id}::uuid`;
      // While its fan-in runs (the app's state it writes, a load's verdict), the store refuses the
      // delete with a refusal that passes, and the task stays; the runtime's delete waits it out.
      await expect(app.fanout.store.deleteTask(task.id)).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('its fan-in is running'), retryAfterMs: expect.any(Number) });
      expect(await app.fanout.getTask(task.id)).toMatchObject({ status: 'completed', succeeded: 5000 });
      const deleting = app.fanout.deleteTask(task.id).then(() => order.push('deleted'));
      finishFanIn();
      await deleting;
      expect(order).toEqual(['fan-in ran', 'deleted']);
      expect(await app.fanout.getTask(task.id)).toBeNull();
      const [left] = await app.prisma.$queryRaw<{ items: number; logs: number }[]>`
        SELECT (SELECT count(*) FROM fanout_item WHERE task_id = ${task.id}::uuid)::int AS items,
               (SELECT count(*) FROM fanout_item_log WHERE task_id = ${task.id}::uuid)::int AS logs`;
      expect(left).toEqual({ items: 0, logs: 0 });

      // A task that ended two minutes ago, its ending announced, its fan-in not run.
      const unfannedIn = async () =>
        (
          await app.prisma.$queryRaw<{ id: string }[]>`
            INSERT INTO fanout_task (id, kind, tenant, input, status, total, succeeded, round, announced_round, fanin_round, started_at, completed_at, dispatched_at)
            VALUES (gen_random_uuid(), 'test_batch', null, '{}', 'completed', 0, 0, 1, 1, 0, now() - interval '3 minutes', now() - interval '2 minutes', now() - interval '3 minutes')
            RETURNING id::text`
        )[0]!;

      // One whose fan-in never ran (its hook failed for over a minute): deleted all the same, and
      // once its delete began (marked purged, its app's purge hook running), its fan-in is not taken up.
      const stale = await unfannedIn();
      await app.fanout.store.markPurged!(stale.id, { token: randomUUID(), ms: 60_000 });
      expect(await app.fanout.store.claimFanIn(stale.id, ['test_batch'], 60_000, randomUUID())).toBeNull();
      expect(await app.fanout.store.claimFanIn(null, ['test_batch'], 60_000, randomUUID())).toBeNull();
      await app.fanout.deleteTask(stale.id);
      expect(await app.fanout.getTask(stale.id)).toBeNull();

      // One whose hook failed a moment ago (backing off for 30 s, under no process's token): not a
      // fan-in that runs, so past the minute after its end it is deleted at once, not refused
      // for as long as its hook keeps failing.
      const failing = await unfannedIn();
      const hook = randomUUID();
      expect(await app.fanout.store.claimFanIn(failing.id, ['test_batch'], 60_000, hook)).not.toBeNull();
      await app.fanout.store.releaseFanIn(failing.id, hook, 30_000);
      await app.fanout.deleteTask(failing.id);
      expect(await app.fanout.getTask(failing.id)).toBeNull();
    } finally {
      finishFanIn();
      await app.close();
    }
  }, 90_000);

  it('runs the purge hook in one process at a time: a run that fails after another process looked cannot end the purge, and a run a crash cut short is taken up again', async () => {
    await using db = await createTestDatabase({ migrations: [migrationsDir] });
    // Two processes of the same app; A's hook waits until the test lets it fail.
    let letAFail!: () => void;
    const aMayFail = new Promise<void>((resolve) => (letAFail = resolve));
    let aStarted!: () => void;
    const aRunning = new Promise<void>((resolve) => (aStarted = resolve));
    const calls: string[] = [];
    const processOf = (name: 'A' | 'B') => {
      let app: ReturnType<typeof createAppRuntime>;
      const definition = {
        ...testDefinition(),
        async onPurge(taskIds: readonly string[]) {
          calls.push(name);
          if (name === 'A') {
            aStarted();
            await aMayFail;
            throw new Error('A lost its database connection');
          }
          await app.prisma.$executeRaw`DELETE FROM app_row WHERE task_id = ANY(${[...taskIds]}::uuid[])`;
        },
      };
      app = createAppRuntime({ databaseUrl: db.url, definitions: [definition], maintenance: { intervalMs: 3_600_000, retentionMs: DAY } });
      app.fanout.events.on('error', () => {});
      return app;
    };
    const a = processOf('A');
    const b = processOf('B');
    try {
      await a.fanout.start({ managers: false, children: false, maintenance: false });
      await b.fanout.start({ managers: false, children: false, maintenance: false });
      await a.prisma.$executeRaw`CREATE TABLE app_row (task_id uuid NOT NULL, n int NOT NULL)`;
      const [task] = await a.prisma.$queryRaw<{ id: string }[]>`
        WITH t AS (
          INSERT INTO fanout_task (id, kind, tenant, input, status, total, succeeded, round, announced_round, fanin_round, started_at, completed_at, dispatched_at)
          VALUES (gen_random_uuid(), 'test_batch', 't', '{}', 'completed', 2, 2, 1, 1, 1, now() - interval '3 days', now() - interval '2 days', now() - interval '3 days') RETURNING id),
        i AS (INSERT INTO fanout_item (id, task_id, seq, key, snapshot, status, attempts) SELECT gen_random_uuid(), t.id, s, 'k' || s, '{}', 'succeeded', 1 FROM t, generate_series(0, 1) s),
        r AS (INSERT INTO app_row SELECT t.id, n FROM t, generate_series(1, 6) n)
        SELECT id::text FROM t`;
      const taskState = async () => (await a.prisma.$queryRaw<{ purging: boolean; rows: number }[]>`SELECT purging, (SELECT count(*)::int FROM app_row) AS rows FROM fanout_task WHERE id = ${task!.id}::uuid`)[0]!;

      // A's pass deletes the items and runs its hook; meanwhile B's pass finds nothing to do.
      const aPass = a.fanout.runMaintenance();
      await aRunning;
      await b.fanout.runMaintenance();
      expect(calls).toEqual(['A']);
      // A fails: the purge is not ended, and the task is held back a while from every process.
      letAFail();
      await aPass;
      expect(await taskState()).toEqual({ purging: true, rows: 6 });
      await b.fanout.runMaintenance();
      expect(calls).toEqual(['A']);
      // Once the hold lapses, B runs its hook and ends the purge.
      await waitFor(
        async () => {
          await b.fanout.runMaintenance();
          return !(await taskState()).purging;
        },
        { timeoutMs: 30_000, message: 'B ended the purge' },
      );
      expect(calls).toEqual(['A', 'B']);
      expect(await taskState()).toEqual({ purging: false, rows: 0 });

      // A process that crashed after a batch took the end of a purge (its lease, then no hook):
      // once its lease lapses, another process runs the hook.
      await a.prisma.$executeRaw`INSERT INTO app_row VALUES (${task!.id}::uuid, 7)`;
      await a.prisma.$executeRaw`UPDATE fanout_task SET purging = true, purge_token = gen_random_uuid(), purge_lease_until = now() + interval '1 hour' WHERE id = ${task!.id}::uuid`;
      await b.fanout.runMaintenance();
      expect(calls).toEqual(['A', 'B']);
      await a.prisma.$executeRaw`UPDATE fanout_task SET purge_lease_until = now() - interval '1 second' WHERE id = ${task!.id}::uuid`;
      await b.fanout.runMaintenance();
      expect(calls).toEqual(['A', 'B', 'B']);
      expect(await taskState()).toEqual({ purging: false, rows: 0 });
    } finally {
      await a.close();
      await b.close();
    }
  }, 60_000);

  it("goes on with the maintenance loop while a definition's fan-in or purge hook hangs: deadlines, other definitions' purges and fan-ins; the hung one is logged, a pass run by hand waits for it, and a stop does not wait for it past the grace", async () => {
    await using db = await createTestDatabase({ migrations: [migrationsDir] });
    // The hooks of test_batch hang (and ignore their signal) until the test lets them go.
    let release!: () => void;
    let released!: Promise<void>;
    const gate = () => (released = new Promise<void>((resolve) => (release = resolve)));
    gate();
    const hung = { fanIn: 0, purge: 0 };
    const hanging = {
      ...testDefinition(),
      async onFinish() {
        hung.fanIn++;
        await released;
      },
      async onPurge() {
        hung.purge++;
        await released;
      },
    };
    const otherFanIns: string[] = [];
    const other = defineFanout({
      name: 'other_batch',
      input: z.object({}),
      item: z.object({}),
      listItems: () => [],
      runItem: () => null,
      onFinish: (task) => void otherFanIns.push(task.id),
    });
    const warnings: Array<{ message: string; data?: Record<string, unknown> }> = [];
    const quiet = () => {};
    const logger = { debug: quiet, info: quiet, error: quiet, warn: (message: string, data?: Record<string, unknown>) => void warnings.push({ message, data }) };
    const app = createAppRuntime({ databaseUrl: db.url, definitions: [hanging, other], logger, maintenance: { intervalMs: 50, fanInLeaseMs: 1000, retentionMs: DAY } });
    try {
      // A test_batch task due for its fan-in and one due for purging: both hooks hang.
      await app.prisma.$executeRaw`
        WITH tasks AS (
          INSERT INTO fanout_task (id, kind, tenant, input, status, total, succeeded, round, announced_round, fanin_round, started_at, completed_at, dispatched_at)
          SELECT gen_random_uuid(), 'test_batch', 't', '{}', 'completed', 2, 2, 1, 1, g, now() - interval '3 days', now() - g * interval '2 days', now() - interval '3 days'
          FROM generate_series(0, 1) g RETURNING id)
        INSERT INTO fanout_item (id, task_id, seq, key, snapshot, status, attempts)
        SELECT gen_random_uuid(), tasks.id, s, 'k' || s, '{}', 'succeeded', 1 FROM tasks, generate_series(0, 1) s`;
      await app.fanout.start({ managers: false, children: false, maintenance: true });
      await waitFor(() => hung.fanIn === 1 && hung.purge === 1, { timeoutMs: 20_000, message: 'both hooks of test_batch running' });

      // Meanwhile: an other_batch task past its deadline, one due for its fan-in and one due for purging.
      const [late] = await app.prisma.$queryRaw<{ id: string }[]>`
        INSERT INTO fanout_task (id, kind, tenant, input, status, total, round, started_at, dispatched_at, deadline_at)
        VALUES (gen_random_uuid(), 'other_batch', 't', '{}', 'running', 0, 1, now(), now(), now() - interval '1 second') RETURNING id::text`;
      const [finished] = await app.prisma.$queryRaw<{ id: string }[]>`
        INSERT INTO fanout_task (id, kind, tenant, input, status, total, succeeded, round, announced_round, fanin_round, started_at, completed_at, dispatched_at)
        VALUES (gen_random_uuid(), 'other_batch', 't', '{}', 'completed', 0, 0, 1, 1, 0, now(), now(), now()) RETURNING id::text`;
      const [old] = await app.prisma.$queryRaw<{ id: string }[]>`
        WITH t AS (
          INSERT INTO fanout_task (id, kind, tenant, input, status, total, succeeded, round, announced_round, fanin_round, started_at, completed_at, dispatched_at)
          VALUES (gen_random_uuid(), 'other_batch', 't', '{}', 'completed', 1, 1, 1, 1, 1, now() - interval '3 days', now() - interval '2 days', now() - interval '3 days') RETURNING id),
        i AS (INSERT INTO fanout_item (id, task_id, seq, key, snapshot, status, attempts) SELECT gen_random_uuid(), t.id, 0, 'k', '{}', 'succeeded', 1 FROM t)
        SELECT id::text FROM t`;
      await waitFor(
        async () => {
          const [lateTask, oldTask] = await Promise.all([app.fanout.getTask(late!.id), app.fanout.getTask(old!.id)]);
          return lateTask?.stopReason === 'deadline' && lateTask.status !== 'running' && otherFanIns.includes(finished!.id) && oldTask?.purgedAt instanceof Date;
        },
        { timeoutMs: 20_000, message: 'the loop stopped the overdue task, ran the other fan-in and purged the other task' },
      );
      expect(hung).toEqual({ fanIn: 1, purge: 1 });

      // Still hung after the lease: logged, naming the definition; the hook is not started twice.
      const slow = () => warnings.filter((w) => w.message.includes('have run for'));
      await waitFor(() => slow().some((w) => w.message.includes('fan-ins')) && slow().some((w) => w.message.includes('purges')), { timeoutMs: 20_000, message: 'the hung hooks logged' });
      expect(new Set(slow().map((w) => JSON.stringify(w.data)))).toEqual(new Set([JSON.stringify({ definitions: ['test_batch'] })]));
      expect(hung).toEqual({ fanIn: 1, purge: 1 });

      // A pass run by hand waits for them (the loop meanwhile goes on with its passes), then runs
      // the lanes again: once they are let go, the fan-in's round is recorded and the purge ended.
      const passes = () => app.fanout.stats.maintenance.get('announce')?.passes ?? 0;
      const before = passes();
      let manualDone = false;
      const manual = app.fanout.runMaintenance().then(() => {
        manualDone = true;
      });
      await waitFor(() => passes() >= before + 3, { timeoutMs: 20_000, message: 'three more passes' });
      expect(manualDone).toBe(false);
      release();
      await manual;
      expect(
        await app.prisma.$queryRaw`SELECT count(*) FILTER (WHERE fanin_round < round)::int AS fan_ins, count(*) FILTER (WHERE purging)::int AS purging FROM fanout_task WHERE kind = 'test_batch'`,
      ).toEqual([{ fan_ins: 0, purging: 0 }]);

      // A stop waits for a hung hook through the grace only.
      gate();
      await app.prisma.$executeRaw`
        INSERT INTO fanout_task (id, kind, tenant, input, status, total, succeeded, round, announced_round, fanin_round, started_at, completed_at, dispatched_at)
        VALUES (gen_random_uuid(), 'test_batch', 't', '{}', 'completed', 0, 0, 1, 1, 0, now(), now(), now())`;
      await waitFor(() => hung.fanIn === 2, { timeoutMs: 20_000, message: 'the fan-in hook hung again' });
      await expect(app.fanout.stop({ graceMs: 200 })).resolves.toBeUndefined();
    } finally {
      release();
      await app.close();
    }
  }, 60_000);

  it("sets pg-boss's retention of the child queue's done jobs to match a retention shorter than an hour", async () => {
    await using db = await createTestDatabase({ migrations: [migrationsDir] });
    const deletion = async (app: ReturnType<typeof createAppRuntime>) =>
      (await app.prisma.$queryRaw<{ s: number }[]>`SELECT deletion_seconds AS s FROM pgboss.queue WHERE name = 'test_batch_items'`)[0]!.s;
    const short = createAppRuntime({ databaseUrl: db.url, definitions: [testDefinition()], maintenance: { intervalMs: 3_600_000, retentionMs: 120_000 } });
    try {
      await short.fanout.start({ managers: false, children: false, maintenance: false });
      expect(await deletion(short)).toBe(120);
      // The manager queue's too: with many small tasks, a done manager job each adds up.
      expect((await short.prisma.$queryRaw<{ s: number }[]>`SELECT deletion_seconds AS s FROM pgboss.queue WHERE name = 'test_batch_manager'`)[0]!.s).toBe(120);
    } finally {
      await short.close();
    }
    // Started again without a retention (an existing queue is updated): an hour.
    const kept = createAppRuntime({ databaseUrl: db.url, definitions: [testDefinition()], maintenance: { intervalMs: 3_600_000 } });
    try {
      await kept.fanout.start({ managers: false, children: false, maintenance: false });
      expect(await deletion(kept)).toBe(3600);
    } finally {
      await kept.close();
    }
  });

  it("has pg-boss delete the child queue's done jobs within the retention, not once a day", async () => {
    await using db = await createTestDatabase({ migrations: [migrationsDir] });
    // The first process has no retention (pg-boss maintains hourly), and sets the scene.
    const first = createAppRuntime({ databaseUrl: db.url, definitions: [testDefinition()] });
    await first.fanout.start({ managers: false, children: false, maintenance: false });
    // A child job done two minutes ago (pg-boss stamps a job with its queue's deletion time when
    // it goes in: a minute, the retention), and the queue's last pg-boss maintenance 70 s ago: due
    // with a pass every minute (the retention), not with pg-boss's default of once a day.
    const [{ id }] = (await first.prisma.$queryRaw<{ id: string }[]>`
      INSERT INTO pgboss.job (name, data, state, completed_on, deletion_seconds)
      VALUES ('test_batch_items', '{"tenant":null,"slot":0}'::jsonb, 'completed', now() - interval '2 minutes', 60)
      RETURNING id::text`) as [{ id: string }];
    await first.prisma.$executeRaw`UPDATE pgboss.queue SET maintain_on = now() - interval '70 seconds' WHERE name = 'test_batch_items'`;
    const jobs = async (app: typeof first) => (await app.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM pgboss.job WHERE id = ${id}::uuid`)[0]!.n;
    expect(await jobs(first)).toBe(1);
    await first.close();
    const second = createAppRuntime({ databaseUrl: db.url, definitions: [testDefinition()], maintenance: { retentionMs: 60_000 } });
    try {
      await second.fanout.start({ managers: false, children: false, maintenance: false });
      // pg-boss supervises every 15 s.
      await waitFor(async () => (await jobs(second)) === 0, { timeoutMs: 45_000, message: "the done job deleted by pg-boss's maintenance" });
    } finally {
      await second.close();
    }
  });

  it('refuses a retention shorter than a minute, naming the setting', () => {
    expect(() => createAppRuntime({ databaseUrl: 'postgres://127.0.0.1:1/none', definitions: [testDefinition()], maintenance: { retentionMs: 1000 } })).toThrow(/maintenance\.retentionMs/);
  });
});
