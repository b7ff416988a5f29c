import { describe, expect, it } from 'vitest';
import { testApp, waitFor } from './fixtures/harness.ts';

describe('worker processes', () => {
  it('three worker processes complete one task of 2,000 items with exact counts', async () => {
    await using t = await testApp();
    const workers = await t.spawnWorkers(3);
    const task = await t.app.fanout.submit('test_batch', { count: 2000, item: { sleepMs: 2 } });
    const done = await waitFor(async () => {
      const current = await t.app.fanout.getTask(task.id);
      return current?.status === 'completed' ? current : null;
    }, { timeoutMs: 120_000, message: 'task completed' });
    expect(done).toMatchObject({ total: 2000, succeeded: 2000, failed: 0, cancelled: 0, round: 1 });
    expect(done.dispatchedAt).not.toBeNull();

    const rows = await t.app.prisma.$queryRaw<{ status: string; attempts: number; n: number }[]>`
      SELECT status, attempts, count(*)::int AS n FROM fanout_item WHERE task_id = ${task.id}::uuid GROUP BY status, attempts`;
    expect(rows).toEqual([{ status: 'succeeded', attempts: 1, n: 2000 }]);

    // Every process took a share, and exactly one announced the completion and ran the fan-in.
    const pids = await t.app.prisma.$queryRaw<{ pid: number; n: number }[]>`
      SELECT (result->>'pid')::int AS pid, count(*)::int AS n FROM fanout_item WHERE task_id = ${task.id}::uuid GROUP BY 1`;
    expect(pids.map((p) => p.pid).sort()).toEqual(workers.map((w) => w.pid).sort());
    await waitFor(() => workers.flatMap((w) => w.lines).some((l) => l.startsWith(`FANIN ${task.id}`)), { message: 'fan-in' });
    const all = workers.flatMap((w) => w.lines);
    expect(all.filter((l) => l === `TASK task.completed ${task.id}`)).toHaveLength(1);
    expect(all.filter((l) => l.startsWith(`FANIN ${task.id}`))).toEqual([`FANIN ${task.id} 1 completed`]);
  });
});
