import { collectEventStream } from '@fanout/sse-pg';
import { startTempPostgres, waitFor } from '@fanout/testdb';
import { describe, expect, it } from 'vitest';
import { appTest, TEST_TOKEN, type AppTestOf } from '../src/testing/index.ts';
import echo from './fixtures/echo-app.ts';

// Chaos: the kit's echo app (API and worker processes, real OS processes) while worker processes
// are SIGKILLed over and over, and while PostgreSQL itself crashes and comes back. Whatever
// happens, every task ends once with exact counts, its item rows agree with its counters, its
// fan-in runs once, and every live stream gets one ending.

type T = AppTestOf<typeof echo>;
type TaskJson = { id: string; status: string; total: number; succeeded: number; failed: number; cancelled: number; round: number };
const TOKENS: Record<string, string> = { 'team-a': TEST_TOKEN.a, 'team-b': TEST_TOKEN.b };

async function submit(t: T, count: number, tenant: string): Promise<string> {
  const res = await t.call('POST', '/tasks', { body: { input: { count } }, token: TOKENS[tenant]! });
  expect(res.status).toBe(202);
  return ((await res.json()) as { id: string }).id;
}

async function openStream(t: T, path: string, tenant: string) {
  const res = await t.call('GET', path, { token: TOKENS[tenant]! });
  expect(res.status).toBe(200);
  return collectEventStream(res.body!);
}

const settled = (x: TaskJson) => x.succeeded + x.failed + x.cancelled;

/** What the database says about a task: its counters, its item rows by status, its fan-in runs. */
async function truth(t: T, id: string) {
  const task = (await t.rt.fanout.getTask(id))!;
  const rows = await t.rt.ctx.prisma.$queryRaw<{ status: string; n: number }[]>`
    SELECT status, count(*)::int AS n FROM fanout_item WHERE task_id = ${id}::uuid GROUP BY status`;
  const items = Object.fromEntries(rows.map((r) => [r.status, r.n]));
  const [fanIns] = await t.rt.ctx.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM echo_mark WHERE tenant = '(fan-in)' AND subject = ${id}`;
  const [announced] = await t.rt.ctx.prisma.$queryRaw<{ r: number }[]>`SELECT announced_round AS r FROM fanout_task WHERE id = ${id}::uuid`;
  return { task, items, fanIns: fanIns!.n, announcedRound: announced!.r };
}

/** What a task that does not finish is waiting for: its items, ready rows, claims, and the child queue's jobs. */
async function whereItStands(t: T, id: string): Promise<string> {
  const db = t.rt.ctx.prisma;
  const [state] = await db.$queryRaw<Record<string, unknown>[]>`
    SELECT (SELECT row_to_json(x) FROM (SELECT status, total, succeeded, failed, dispatched_at, announced_round, fanin_round FROM fanout_task WHERE id = ${id}::uuid) x) AS task,
           (SELECT json_object_agg(status, n) FROM (SELECT status, count(*) AS n FROM fanout_item WHERE task_id = ${id}::uuid GROUP BY status) i) AS items,
           (SELECT count(*)::int FROM fanout_ready WHERE task_id = ${id}::uuid) AS ready,
           (SELECT json_agg(json_build_object('lease', lease_until, 'items', cardinality(item_ids))) FROM fanout_claim) AS claims,
           (SELECT json_object_agg(state, n) FROM (SELECT state, count(*) AS n FROM pgboss.job WHERE name = 'kit_echo_items' GROUP BY state) j) AS jobs`;
  return JSON.stringify(state);
}

/** Every live stream of the run: one per task, and one per tenant for all its tasks. */
async function expectOneEndingEach(
  perTask: Map<string, Awaited<ReturnType<typeof openStream>>>,
  perTenant: Map<string, { stream: Awaited<ReturnType<typeof openStream>>; tasks: string[] }>,
) {
  for (const [id, stream] of perTask) {
    // The stream of a task closes after its ending.
    await waitFor(() => stream.ended, { timeoutMs: 30_000, message: `the stream of task ${id} ended` });
    const endings = stream.messages.filter((m) => m.event === 'task.completed' || m.event === 'task.failed' || m.event === 'task.cancelled');
    expect(endings.map((m) => m.event), `endings on the stream of task ${id}`).toEqual(['task.completed']);
    expect(endings[0]!.data).toMatchObject({ taskId: id, counts: { failed: 0, cancelled: 0 } });
    expect(endings[0]!.data.counts.succeeded).toBe(endings[0]!.data.counts.total);
  }
  for (const [tenant, { stream, tasks }] of perTenant) {
    await waitFor(() => tasks.every((id) => stream.messages.some((m) => m.event === 'task.completed' && m.data.taskId === id)), {
      timeoutMs: 30_000,
      message: `the endings on the stream of tenant ${tenant}`,
    });
    for (const id of tasks) {
      expect(stream.messages.filter((m) => m.event === 'task.completed' && m.data.taskId === id), `endings of task ${id} on the stream of ${tenant}`).toHaveLength(1);
    }
    await stream.cancel();
  }
}

describe('chaos', () => {
  it('worker processes SIGKILLed one after another over three 2,000-item tasks: exact counts, one fan-in, one ending per stream', async () => {
    // Every kill costs the items its victim held an attempt (their lease lapses). With a worker
    // killed every 0.7 s, an item could be held by four victims in a row and fail, on its last
    // attempt, as `lease_lapsed` (2 to 19 of 6,000 items in one run of three or four): the items
    // get attempts enough for the counts to be exact whichever they meet.
    await using t = await appTest(echo, { env: { ECHO_SLEEP_MS: 100, FANOUT_WORKER_CONCURRENCY: 10, ECHO_RETRY_LIMIT: 20 } });
    await t.api();
    let workers = await t.workers(3);
    const started = performance.now();
    const tasks = [await submit(t, 2000, 'team-a'), await submit(t, 2000, 'team-b'), await submit(t, 2000, 'team-a')];
    const tenantOf = new Map([
      [tasks[0]!, 'team-a'],
      [tasks[1]!, 'team-b'],
      [tasks[2]!, 'team-a'],
    ]);
    const perTask = new Map<string, Awaited<ReturnType<typeof openStream>>>();
    for (const id of tasks) perTask.set(id, await openStream(t, `/tasks/${id}/events`, tenantOf.get(id)!));
    const perTenant = new Map([
      ['team-a', { stream: await openStream(t, '/events', 'team-a'), tasks: [tasks[0]!, tasks[2]!] }],
      ['team-b', { stream: await openStream(t, '/events', 'team-b'), tasks: [tasks[1]!] }],
    ]);

    const progress = async () => {
      const all = await Promise.all(tasks.map((id) => t.rt.fanout.getTask(id)));
      return { settled: all.reduce((n, x) => n + settled(x as TaskJson), 0), done: all.every((x) => x && ['completed', 'failed', 'cancelled'].includes(x.status)) };
    };
    // Kill a worker (in turn) as soon as the replacement of the last one is ready, until the
    // tasks are done or fewer than 300 items are left.
    let kills = 0;
    for (;;) {
      const now = await progress();
      if (now.done || now.settled > 6000 - 300) break;
      console.log(`chaos: ${now.settled} settled at ${Math.round(performance.now() - started)} ms, killing a worker`);
      const victim = workers[kills % workers.length]!;
      victim.kill('SIGKILL');
      await victim.exited;
      kills++;
      const [fresh] = await t.workers(1);
      workers = workers.map((w) => (w === victim ? fresh! : w));
    }
    expect(kills).toBeGreaterThanOrEqual(3);

    for (const id of tasks) {
      const ended = await waitFor(async () => {
        const x = await truth(t, id);
        return x.task.status === 'completed' && x.fanIns > 0 && x.announcedRound === 1 ? x : null;
      }, { timeoutMs: 60_000, message: `task ${id} completed, its fan-in run and its ending announced` });
      expect(ended.task).toMatchObject({ total: 2000, succeeded: 2000, failed: 0, cancelled: 0, round: 1 });
      expect(ended.items).toEqual({ succeeded: 2000 });
      expect(ended.fanIns).toBe(1);
      // Recomputing the counters from the item rows changes nothing.
      expect(await t.rt.fanout.reconcile(id)).toMatchObject({ drift: [], finished: false });
    }
    await expectOneEndingEach(perTask, perTenant);
    console.log(`chaos: ${kills} workers SIGKILLed; 6,000 items in ${Math.round((performance.now() - started) / 1000)} s`);
  }, 300_000);

  it('a PostgreSQL crash mid-run: /readyz reports the outage and the recovery, the tasks finish exactly, every stream gets its ending', async () => {
    await using server = await startTempPostgres();
    await using t = await appTest(echo, { server, env: { ECHO_SLEEP_MS: 10, FANOUT_WORKER_CONCURRENCY: 20 } });
    const api = await t.api();
    await t.workers(2);
    const tasks = [await submit(t, 1500, 'team-a'), await submit(t, 1500, 'team-b')];
    const tenantOf = new Map([
      [tasks[0]!, 'team-a'],
      [tasks[1]!, 'team-b'],
    ]);
    const perTask = new Map<string, Awaited<ReturnType<typeof openStream>>>();
    for (const id of tasks) perTask.set(id, await openStream(t, `/tasks/${id}/events`, tenantOf.get(id)!));
    const perTenant = new Map([
      ['team-a', { stream: await openStream(t, '/events', 'team-a'), tasks: [tasks[0]!] }],
      ['team-b', { stream: await openStream(t, '/events', 'team-b'), tasks: [tasks[1]!] }],
    ]);
    const readyz = async () => {
      const res = await fetch(`${api.url}/readyz`);
      return { status: res.status, body: (await res.json()) as { ok: boolean; checks: Record<string, string> } };
    };
    expect((await readyz()).status).toBe(200);
    await waitFor(async () => {
      const all = await Promise.all(tasks.map((id) => t.rt.fanout.getTask(id)));
      return all.every((x) => x && settled(x as TaskJson) >= 300);
    }, { message: 'both tasks under way' });

    let outage: Awaited<ReturnType<typeof readyz>> | null = null;
    await server.restart({
      crash: true,
      whileDown: async () => {
        outage = await waitFor(async () => {
          const r = await readyz();
          return r.status === 503 ? r : null;
        }, { timeoutMs: 30_000, message: '/readyz reporting the outage' });
      },
    });
    expect(outage).toMatchObject({ status: 503, body: { ok: false, checks: { database: 'failed' } } });
    await waitFor(async () => (await readyz()).status === 200, { timeoutMs: 60_000, message: '/readyz reporting the recovery' });

    for (const id of tasks) {
      const ended = await waitFor(async () => {
        const x = await truth(t, id).catch(() => null); // this process's own pool reconnects too
        return x && x.task.status === 'completed' && x.fanIns > 0 && x.announcedRound === 1 ? x : null;
      }, { timeoutMs: 120_000, message: `task ${id} completed after the crash`, describe: () => whereItStands(t, id) });
      expect(ended.task).toMatchObject({ total: 1500, succeeded: 1500, failed: 0, cancelled: 0 });
      expect(ended.items).toEqual({ succeeded: 1500 });
      expect(ended.fanIns).toBe(1);
      expect(await t.rt.fanout.reconcile(id)).toMatchObject({ drift: [], finished: false });
    }
    await expectOneEndingEach(perTask, perTenant);
  }, 300_000);
});
