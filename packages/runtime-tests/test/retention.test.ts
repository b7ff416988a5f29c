import { migrationsDir } from '@fanout/prisma-adapter';
import { createTestDatabase } from '@fanout/testdb';
import { describe, expect, it } from 'vitest';
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
      expect(first).toMatchObject({ taskId: old.id, purged: false });
      expect(await itemsOf(old.id)).toBe(1500);

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
      expect(await app.fanout.store.purgeFinished!(DAY, 1000, ['test_batch'])).toEqual({ taskId: null, deleted: 0, purged: false });
    } finally {
      await app.close();
    }
  }, 90_000);

  it("sets pg-boss's retention of the child queue's done jobs to match a retention shorter than an hour", async () => {
    await using db = await createTestDatabase({ migrations: [migrationsDir] });
    const deletion = async (app: ReturnType<typeof createAppRuntime>) =>
      (await app.prisma.$queryRaw<{ s: number }[]>`SELECT deletion_seconds AS s FROM pgboss.queue WHERE name = 'test_batch_items'`)[0]!.s;
    const short = createAppRuntime({ databaseUrl: db.url, definitions: [testDefinition()], maintenance: { intervalMs: 3_600_000, retentionMs: 120_000 } });
    try {
      await short.fanout.start({ managers: false, children: false, maintenance: false });
      expect(await deletion(short)).toBe(120);
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
