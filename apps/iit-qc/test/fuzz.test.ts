import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TEST_TOKEN } from '@fanout/kit/testing';
import { waitFor } from '@fanout/testdb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATA, qcTest, type QcTest } from './harness.ts';

// Every route of the QC app's OpenAPI document, fuzzed against a real API process: tenant B
// (mostly) and tenant A, whose studies, rule sets, runs, findings and queries B must never see.
const PROJECT = join(DATA, 'redcap', 'clinical-trial-1');
const RULES = 'name: REDCap checks\ngenerate:\n  - from: redcap\n    checks: [A, E]\n';
let t: QcTest;
const ids = { a: [] as string[], b: [] as string[] };
const keys: string[] = [];
const secrets: string[] = [];

beforeAll(async () => {
  t = await qcTest();
  await t.api({ FANOUT_AUTH_FAILURES_PER_MINUTE: 0 });
  const workers = await t.workers(1);
  for (const [tenant, token] of [['a', TEST_TOKEN.a], ['b', TEST_TOKEN.b]] as const) {
    const as = async (method: string, path: string, body?: unknown) => {
      const res = await t.call(method, path, { token, ...(body === undefined ? {} : { body }) });
      if (!res.ok && !(method === 'GET' && res.status === 404)) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
      return (await res.json()) as any;
    };
    const upload = async (studyId: string, name: string, kind: string) => {
      const form = new FormData();
      form.set('kind', kind);
      form.set('file', new Blob([readFileSync(join(PROJECT, name))]), name);
      const res = await fetch(`${t.apiUrl}/api/iit/studies/${studyId}/datasets`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
      expect(res.status).toBe(201);
      return ((await res.json()) as { datasets: { id: string }[] }).datasets.map((d) => d.id);
    };
    const study = (await as('POST', '/studies', { name: `study of ${tenant}`, standard: 'redcap' })).id as string;
    const datasets = [...(await upload(study, 'dictionary.csv', 'dictionary')), ...(await upload(study, 'data.csv', 'records'))];
    const ruleSet = (await as('POST', `/studies/${study}/rule-sets`, { source: RULES })).id as string;
    const run = (await as('POST', '/runs', { studyId: study, ruleSetId: ruleSet })).id as string;
    await waitFor(async () => (await as('GET', `/runs/${run}`)).stage === 'done', { timeoutMs: 120_000, intervalMs: 200, message: `run ${run} of ${tenant}` });
    const discrepancies = (await as('GET', `/studies/${study}/discrepancies?limit=3`)).discrepancies as { key: string }[];
    const query = (await as('POST', `/studies/${study}/discrepancies/${discrepancies[0]!.key}/queries`, { text: `query of ${tenant}` })).id as string;
    ids[tenant].push(study, ruleSet, run, query, ...datasets);
    keys.push(...discrepancies.map((d) => d.key));
    if (tenant === 'a') secrets.push(study, ruleSet, run, query, ...datasets, `study of ${tenant}`, `query of ${tenant}`);
  }
  // Runs the fuzz starts stay queued.
  await Promise.all(workers.map((w) => w.stop()));
}, 300_000);

afterAll(async () => {
  await t?.[Symbol.asyncDispose]();
});

describe('the QC API, fuzzed', () => {
  it('every route answers a documented status with a documented body, never a 5xx, never another tenant’s data', async () => {
    const run = await t.fuzz({
      secrets,
      pathValues: { id: [...ids.a, ...ids.b], itemId: [], key: keys, action: ['answer', 'close', 'reopen', 'comment'] },
      queryValues: { task: [...ids.a, ...ids.b] },
      runs: { plain: 15, withInput: 60 },
    });
    expect(run.operations).toBeGreaterThan(40);
    expect(run.requests).toBeGreaterThan(1000);
  }, 300_000);
});
