import { randomUUID } from 'node:crypto';
import { waitFor } from '@fanout/testdb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appTest, TEST_TOKEN, type AppTestOf } from '../src/testing/index.ts';
import echo from './fixtures/echo-app.ts';

// Every route of the echo app's OpenAPI document, fuzzed against a real API process: tenant B
// (mostly) and tenant A (whose tasks, items and notes B must never see), the operator, no one.
let t: AppTestOf<typeof echo>;
const ids = { a: { tasks: [] as string[], items: [] as string[] }, b: { tasks: [] as string[], items: [] as string[] } };
const secrets: string[] = [];

async function finishedTask(token: string, count: number): Promise<{ id: string; items: string[] }> {
  const res = await t.call('POST', '/tasks', { token, body: { input: { count } } });
  const { id } = (await res.json()) as { id: string };
  await waitFor(async () => ((await (await t.call('GET', `/tasks/${id}`, { token })).json()) as { status: string }).status === 'completed', { message: `task ${id}` });
  const items = ((await (await t.call('GET', `/tasks/${id}/items`, { token })).json()) as { items: { id: string }[] }).items.map((i) => i.id);
  return { id, items };
}

beforeAll(async () => {
  t = await appTest(echo);
  // Refused tokens are part of the fuzz: counting them would soon refuse every request (429).
  await t.api({ FANOUT_AUTH_FAILURES_PER_MINUTE: 0 });
  const workers = await t.workers(1);
  for (const [tenant, token] of [['a', TEST_TOKEN.a], ['b', TEST_TOKEN.b]] as const) {
    for (const count of [3, 2]) {
      const task = await finishedTask(token, count);
      ids[tenant].tasks.push(task.id);
      ids[tenant].items.push(...task.items);
    }
  }
  const mark = `secret-of-a-${randomUUID()}`;
  expect((await t.call('POST', `/marks/${ids.a.tasks[0]}`, { body: { text: mark } })).status).toBe(201);
  secrets.push(...ids.a.tasks, ...ids.a.items, mark);
  // Tasks the fuzz submits stay queued: up to 10,000 echoes each would only slow the run down.
  await Promise.all(workers.map((w) => w.stop()));
});

afterAll(async () => {
  await t?.[Symbol.asyncDispose]();
});

describe('the OpenAPI document, fuzzed', () => {
  it('every route answers a documented status with a documented body, never a 5xx, never another tenant’s data', async () => {
    // A fixed seed keeps the run reproducible; FANOUT_FUZZ_SEED explores others.
    const run = await t.fuzz({
      secrets,
      pathValues: { id: [...ids.a.tasks, ...ids.b.tasks], itemId: [...ids.a.items, ...ids.b.items], subject: ['n1', 'n2'] },
      queryValues: { task: [...ids.a.tasks, ...ids.b.tasks], subject: ['n1'] },
    });
    expect(run.operations).toBeGreaterThan(25);
    expect(run.requests).toBeGreaterThan(800);
  });
});
