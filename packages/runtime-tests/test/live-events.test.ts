import { collectEventStream } from '@fanout/sse-pg';
import { describe, expect, it } from 'vitest';
import { testApp, waitFor } from './fixtures/harness.ts';

const settledOf = (m: { data: { counts?: { succeeded: number; failed: number; cancelled: number } } }) =>
  m.data.counts ? m.data.counts.succeeded + m.data.counts.failed + m.data.counts.cancelled : -1;

async function submit(port: number, body: object, tenant = 'team-a'): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/tasks`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-tenant': tenant }, body: JSON.stringify(body) });
  expect(res.status).toBe(202);
  return ((await res.json()) as { id: string }).id;
}

async function events(port: number, taskId: string, tenant = 'team-a', lastEventId?: string) {
  const res = await fetch(`http://127.0.0.1:${port}/tasks/${taskId}/events`, {
    headers: { 'x-tenant': tenant, ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
  });
  expect(res.status).toBe(200);
  return collectEventStream(res.body!);
}

describe('live task events across processes', () => {
  it('a client on API process A sees monotonic progress and the ending of a task run by workers B and C, submitted on API D', async () => {
    await using t = await testApp();
    const [a, d] = await Promise.all([t.spawnApi('a'), t.spawnApi('d')]);
    await t.spawnWorkers(2, { FANOUT_CONCURRENCY: 10 });
    const taskId = await submit(d!.port, { count: 600, item: { sleepMs: 5 } });
    const sse = await events(a!.port, taskId);
    await waitFor(() => sse.messages.some((m) => m.event === 'task.completed'), { timeoutMs: 60_000, message: 'the completed event' });
    const state = sse.messages.filter((m) => m.event.startsWith('task.'));
    expect(state[0]!.event).toBe('task.progress'); // the current state comes first
    const settled = state.map(settledOf);
    expect(settled).toEqual([...settled].sort((x, y) => x - y)); // never backwards
    expect(new Set(state.map((m) => m.id)).size).toBe(state.length); // no repeats
    expect(state.length).toBeGreaterThan(2); // live progress, not only the ending
    expect(state.at(-1)).toMatchObject({ event: 'task.completed', id: '1.end', data: { counts: { total: 600, succeeded: 600, failed: 0 } } });
    expect(state.filter((m) => m.event === 'task.completed')).toHaveLength(1);
    await sse.cancel();
  });

  it("the ending still arrives after the API process's LISTEN connection is killed mid-task", async () => {
    await using t = await testApp();
    const a = await t.spawnApi('a');
    await t.spawnWorkers(2, { FANOUT_CONCURRENCY: 5 });
    const taskId = await submit(a.port, { count: 300, item: { sleepMs: 50 } });
    const sse = await events(a.port, taskId);
    await waitFor(() => sse.messages.filter((m) => m.event === 'task.progress').length >= 2, { message: 'live progress' });
    const killed = await t.app.prisma.$queryRaw<{ killed: boolean }[]>`
      SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE application_name = 'fanout-listener-a'`;
    expect(killed).toEqual([{ killed: true }]);
    expect((await t.app.fanout.getTask(taskId))?.status).toBe('running'); // killed mid-task
    await waitFor(() => sse.messages.some((m) => m.event === 'task.completed'), { timeoutMs: 60_000, message: 'the ending after the reconnect' });
    expect(sse.messages.at(-1)).toMatchObject({ event: 'task.completed', data: { counts: { total: 300, succeeded: 300, failed: 0, cancelled: 0 } } });
    const reconnected = await t.app.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'fanout-listener-a'`;
    expect(reconnected).toEqual([{ n: 1 }]);
    await sse.cancel();
  });

  it('a client that connects after the task finished gets the final state at once; another tenant gets 404', async () => {
    await using t = await testApp();
    const a = await t.spawnApi('a');
    await t.spawnWorkers(1);
    const taskId = await submit(a.port, { count: 20 });
    await waitFor(async () => (await t.app.fanout.getTask(taskId))?.status === 'completed', { message: 'task completed' });
    const sse = await events(a.port, taskId);
    await waitFor(() => sse.messages.length === 1, { message: 'the final state' });
    expect(sse.messages[0]).toMatchObject({ event: 'task.completed', id: '1.end', data: { counts: { succeeded: 20, total: 20 } } });
    await sse.cancel();
    const other = await fetch(`http://127.0.0.1:${a.port}/tasks/${taskId}/events`, { headers: { 'x-tenant': 'team-b' } });
    expect(other.status).toBe(404);
  });
});
