import { TEST_TOKEN } from '@fanout/kit/testing';
import { waitFor } from '@fanout/testdb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSampleLibrary } from '../src/library/sample.ts';
import { aslTest, type AslTest } from './harness.ts';

// Every route of the ASL app's OpenAPI document, fuzzed against a real API process: tenant B
// (mostly) and tenant A, whose papers, tasks and items B must never see.
let t: AslTest;
const ids = { a: { tasks: [] as string[], items: [] as string[], documents: [] as string[] }, b: { tasks: [] as string[], items: [] as string[], documents: [] as string[] } };
const secrets: string[] = [];

beforeAll(async () => {
  t = await aslTest();
  await t.api({ FANOUT_AUTH_FAILURES_PER_MINUTE: 0 });
  const workers = await t.workers(1);
  for (const [tenant, owner, token, from] of [['a', 'team-a', TEST_TOKEN.a, 1], ['b', 'team-b', TEST_TOKEN.b, 101]] as const) {
    const documents = await createSampleLibrary(t.prisma, t.storage, owner, 3, from);
    ids[tenant].documents.push(...documents);
    const { id } = (await (await t.call('POST', '/tasks', { token, body: { input: { documentIds: documents } } })).json()) as { id: string };
    await waitFor(async () => ((await (await t.call('GET', `/tasks/${id}`, { token })).json()) as { status: string }).status === 'completed', { timeoutMs: 60_000, message: `task ${id}` });
    ids[tenant].tasks.push(id);
    ids[tenant].items.push(...((await (await t.call('GET', `/tasks/${id}/items`, { token })).json()) as { items: { id: string }[] }).items.map((i) => i.id));
  }
  const own = (await t.prisma.kbDocument.findMany({ where: { owner: 'team-a' } })).map((d) => d.filename);
  secrets.push(...ids.a.tasks, ...ids.a.items, ...ids.a.documents, ...own);
  // Batches the fuzz submits stay queued.
  await Promise.all(workers.map((w) => w.stop()));
});

afterAll(async () => {
  await t?.[Symbol.asyncDispose]();
});

describe('the ASL API, fuzzed', () => {
  it('every route answers a documented status with a documented body, never a 5xx, never another tenant’s papers', async () => {
    const run = await t.fuzz({
      secrets,
      pathValues: { id: [...ids.a.tasks, ...ids.b.tasks], itemId: [...ids.a.items, ...ids.b.items] },
      queryValues: { task: [...ids.a.tasks, ...ids.b.tasks] },
      runs: { plain: 15, withInput: 80 },
    });
    expect(run.operations).toBeGreaterThan(25);
  });
});
