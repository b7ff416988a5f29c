import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSimulatedLlm, type ChatMessage } from '@fanout/llm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readXpt } from '../src/data/xpt.ts';
import { PILOT, qcTest, type QcTest } from './harness.ts';

const RULES = `name: agent review
rules:
  - id: AI-AETERM
    scope: AE
    level: subject
    kind: llm
    severity: notice
    message: Verbatim term inconsistent with the coded term
    prompt: Is each adverse event's verbatim term (AETERM) consistent with its coded term (AEDECOD)? Flag the records where it is not.
    show: [AETERM, AEDECOD]
`;

const words = (v: unknown) => new Set(String(v ?? '').toUpperCase().split(/[^A-Z0-9]+/).filter((w) => w.length > 2));
const inconsistent = (r: { AETERM: unknown; AEDECOD: unknown }) => ![...words(r.AETERM)].some((w) => words(r.AEDECOD).has(w));

describe('agent review: rules of kind llm ask the platform model about a subject\u2019s records', () => {
  let t: QcTest;
  let llm: Awaited<ReturnType<typeof startSimulatedLlm>>;
  let malformedSubject = '';
  const inFlight = { now: 0, max: 0 };

  // A fake model that answers deterministically: it flags records whose terms differ, answers one
  // subject with something that is not JSON, and the first call with a 429.
  const answer = async (messages: readonly ChatMessage[]) => {
    inFlight.now++;
    inFlight.max = Math.max(inFlight.max, inFlight.now);
    try {
      await new Promise((r) => setTimeout(r, 20));
      const user = messages.find((m) => m.role === 'user')!.content;
      if (user.includes(`Subject: ${malformedSubject}\n`)) return 'I think these look fine!';
      const records = JSON.parse(user.slice(user.indexOf('\n', user.indexOf('Records (')) + 1)) as { record: number; AETERM: string; AEDECOD: string }[];
      return JSON.stringify({ findings: records.filter((r) => inconsistent(r)).map((r) => ({ record: r.record, message: `${r.AETERM} is coded ${r.AEDECOD}` })) });
    } finally {
      inFlight.now--;
    }
  };

  beforeAll(async () => {
    let calls = 0;
    llm = await startSimulatedLlm({ answer, latencyMs: 1, rateLimitedShare: 0.5, unavailableShare: 0, random: () => (calls++ === 0 ? 0.1 : 0.9) });
    t = await qcTest({ FANOUT_LLM_BASE_URL: llm.baseUrl, FANOUT_LLM_MODEL: 'fake-model', FANOUT_LLM_CONCURRENCY: 3 });
    await t.api();
    await t.workers(2);
  }, 120_000);

  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
    await llm?.close();
  });

  it('records the model\u2019s findings with model and prompt version, retries a 429, and fails the rule for a subject whose answer is malformed', async () => {
    const ae: Record<string, any>[] = [];
    const table = await readXpt(join(PILOT, 'ae.xpt'));
    for await (const row of table.rows()) ae.push(row);
    // The pilot's verbatim terms equal their coded terms; a few are made inconsistent here.
    for (const i of [10, 50, 100, 200, 400, 700]) ae[i]!.AETERM = 'PAIN IN THE LEFT FOOT';
    malformedSubject = String(ae[0]!.USUBJID);
    const quote = (v: unknown) => `"${v === null ? '' : String(v).replace(/"/g, '""')}"`;
    const csv = [table.columns.map((c) => c.name).join(','), ...ae.map((r) => table.columns.map((c) => quote(r[c.name])).join(','))].join('\n') + '\n';
    const studyId = await t.study('agent review', 'sdtm');
    expect((await t.upload(studyId, 'dm.xpt', readFileSync(join(PILOT, 'dm.xpt')))).status).toBe(201);
    expect((await t.upload(studyId, 'ae.csv', new TextEncoder().encode(csv))).status).toBe(201);
    const runId = await t.run(studyId, await t.ruleSet(studyId, RULES));
    await t.waitRun(runId);
    const findings = await t.findings(runId);
    const expected = ae.filter((r) => r.USUBJID !== malformedSubject && inconsistent(r as any));
    expect(expected.length).toBeGreaterThanOrEqual(5);
    expect(findings.map((f) => `${f.subject}:${f.recno}`).sort()).toEqual(expected.map((r) => `${r.USUBJID}:${ae.indexOf(r) + 1}`).sort());
    expect(findings[0].variables).toEqual(['AETERM', 'AEDECOD', 'model', 'prompt_version']);
    expect(findings[0].values[2]).toBe('fake-model');
    expect(findings[0].values[3]).toMatch(/^[0-9a-f]{12}$/);
    const rule = (await t.rules(runId)).get('AI-AETERM')!;
    expect(rule.status).toBe('error');
    expect(rule.errors).toBe(1);
    expect(rule.reason).toMatch(/malformed: the LLM answer is not JSON: I think these look fine!/);
    expect(llm.calls.rateLimited).toBe(1);
    // The platform's strict limit held across both worker processes.
    expect(inFlight.max).toBeLessThanOrEqual(3);
    const task = await t.json('GET', `/tasks/${runId}`);
    expect(task.failed).toBe(0);
  }, 180_000);
});
