import { TEST_TOKEN } from '@fanout/kit/testing';
import { waitFor } from '@fanout/testdb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataPath, etlTest, fileOf, postLoad, specText, type EtlTest } from './harness.ts';

// Every route of the ETL app's OpenAPI document, fuzzed against a real API process: tenant B
// (mostly) and tenant A, whose uploads, specs and loads B must never see. Publish and discard are
// fuzzed too: the loads they may act on are the fuzz's own.
let t: EtlTest;
const ids = { a: [] as string[], b: [] as string[] };
const secrets: string[] = [];

beforeAll(async () => {
  t = await etlTest();
  await t.api({ FANOUT_AUTH_FAILURES_PER_MINUTE: 0 });
  const workers = await t.workers(1);
  for (const [tenant, token] of [['a', TEST_TOKEN.a], ['b', TEST_TOKEN.b]] as const) {
    const res = await postLoad(t, fileOf(dataPath('medicaldata/messy_uc.xlsx'), `messy of ${tenant}.xlsx`), specText('messy_uc.yaml'), {}, token);
    if (res.status !== 202) throw new Error(`POST /loads: ${res.status} ${await res.text()}`);
    const load = (await res.json()) as { id: string; uploadId: string; specId: string };
    await waitFor(async () => ((await (await t.call('GET', `/loads/${load.id}`, { token })).json()) as { status: string }).status !== 'loading', { timeoutMs: 120_000, message: `load of ${tenant}` });
    ids[tenant].push(load.id, load.uploadId, load.specId);
    if (tenant === 'a') secrets.push(load.id, load.uploadId, load.specId, `messy of ${tenant}.xlsx`);
  }
  // Loads the fuzz starts stay queued.
  await Promise.all(workers.map((w) => w.stop()));
}, 300_000);

afterAll(async () => {
  await t?.[Symbol.asyncDispose]();
});

describe('the ETL API, fuzzed', () => {
  it('every route answers a documented status with a documented body, never a 5xx, never another tenant’s data', async () => {
    const run = await t.fuzz({ secrets, pathValues: { id: [...ids.a, ...ids.b], itemId: [] }, queryValues: { task: [...ids.a, ...ids.b] }, runs: { plain: 15, withInput: 60 } });
    expect(run.operations).toBeGreaterThan(25);
    expect(run.requests).toBeGreaterThan(800);
  }, 300_000);
});
