import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectEventStream } from '@fanout/sse-pg';
import { TEST_TOKEN } from '@fanout/kit/testing';
import { waitFor } from '@fanout/testdb';
import { describe, expect, it } from 'vitest';
import { createSampleLibrary, sampleKind } from '../src/library/sample.ts';
import { aslTest, type AslTest } from './harness.ts';

async function submit(t: AslTest, documentIds: string[], token: string = TEST_TOKEN.a): Promise<string> {
  const res = await t.call('POST', '/tasks', { token, body: { input: { documentIds } } });
  expect(res.status).toBe(202);
  return ((await res.json()) as { id: string }).id;
}

async function ended(t: AslTest, id: string, timeoutMs = 90_000) {
  return waitFor(
    async () => {
      const task = (await (await t.call('GET', `/tasks/${id}`)).json()) as { status: string; total: number; succeeded: number; failed: number; cancelled: number };
      return ['completed', 'failed', 'cancelled'].includes(task.status) ? task : null;
    },
    {
      timeoutMs,
      message: `task ${id} ended`,
      describe: async () => JSON.stringify(await (await t.call('GET', `/tasks/${id}`)).json()),
    },
  );
}

// Each test starts its own API and worker processes; beside another app's test on a 2-core
// machine, one took more than the default 60 s (seen in CI), before its own waits (90 s) could say
// where it stood.
describe('ASL extraction end to end (API and worker processes over HTTP)', { timeout: 150_000 }, () => {
  it('a 200-document batch completes with exact counts, corrupt and encrypted PDFs failing alone', async () => {
    await using t = await aslTest();
    await t.api();
    await t.workers(2);
    const ids = await createSampleLibrary(t.prisma, t.storage, 'team-a', 200);
    const bad = Array.from({ length: 200 }, (_, i) => sampleKind(i + 1)).filter((k) => k !== 'good').length;
    expect(bad).toBe(12);

    const id = await submit(t, ids);
    // Exports wait for the end.
    expect((await t.call('GET', `/tasks/${id}/results.json`)).status).toBe(409);
    const task = await ended(t, id);
    expect(task).toMatchObject({ status: 'completed', total: 200, succeeded: 188, failed: 12, cancelled: 0 });

    const failed = (await (await t.call('GET', `/tasks/${id}/items?status=failed&limit=50`)).json()) as { items: { error: { code: string } }[] };
    expect(failed.items.map((i) => i.error.code).sort()).toEqual([...Array(8).fill('corrupt_pdf'), ...Array(4).fill('encrypted_pdf')]);

    const json = (await (await t.call('GET', `/tasks/${id}/results.json`)).json()) as { results: { status: string; fields: any; filename: string }[] };
    expect(json.results).toHaveLength(200);
    const first = json.results[0]!;
    expect(first).toMatchObject({ filename: 'paper-0001.pdf', status: 'succeeded' });
    expect(Object.keys(first.fields).sort()).toEqual(['comparator', 'intervention', 'population', 'primaryOutcome', 'sampleSize', 'studyDesign']);
    expect(first.fields.sampleSize.value).toBeGreaterThan(0);

    const csv = await t.call('GET', `/tasks/${id}/results.csv`);
    expect(csv.headers.get('content-type')).toContain('text/csv');
    const lines = (await csv.text()).trim().split('\r\n');
    expect(lines).toHaveLength(201);
    expect(lines[0]).toBe('document_id,filename,status,study_design,sample_size,population,intervention,comparator,primary_outcome,error_code,error,model,prompt_version');
    expect(lines.filter((l) => l.includes(',failed,'))).toHaveLength(12);
  });

  it('an LLM answering 429 and 500 before succeeding: retried, and never more than 5 calls at once across 3 worker processes', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    // The first calls are held until five are in flight at once (or 30 s have passed, and the check
    // below fails): the limit is shown reached however slowly a busy machine reads the papers, and a
    // sixth call, if the limit let one through, would be seen while they are held.
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    const gateTimer = setTimeout(openGate, 30_000);
    const attempts = new Map<string, number>();
    const llm = createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', async () => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        if (inFlight >= 5) openGate();
        // A model's answer takes a while: calls overlap.
        await Promise.all([gate, new Promise((r) => setTimeout(r, 150))]);
        inFlight--;
        const text: string = JSON.parse(raw).messages[1].content;
        const paper = /paper \d+/.exec(text)?.[0] ?? 'unknown';
        const n = (attempts.get(paper) ?? 0) + 1;
        attempts.set(paper, n);
        const number = Number(paper.split(' ')[1]);
        if (n === 1 && number % 3 === 0) {
          res.writeHead(429, { 'retry-after': '1', 'content-type': 'application/json' });
          return res.end('{"error":"rate limited"}');
        }
        if (n === 1 && number % 3 === 1) {
          res.writeHead(500, { 'content-type': 'application/json' });
          return res.end('{"error":"overloaded"}');
        }
        const data = { studyDesign: { value: 'randomised controlled trial', span: { start: 0, end: 5, text: text.slice(0, 5) } }, sampleSize: null, population: null, intervention: null, comparator: null, primaryOutcome: null };
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ choices: [{ message: { content: JSON.stringify(data) } }] }));
      });
    });
    await new Promise<void>((r) => llm.listen(0, '127.0.0.1', r));
    const llmUrl = `http://127.0.0.1:${(llm.address() as AddressInfo).port}/v1`;
    try {
      await using t = await aslTest();
      await t.api();
      await t.workers(3, { FANOUT_LLM_BASE_URL: llmUrl, FANOUT_LLM_API_KEY: 'sk-test', FANOUT_LLM_MODEL: 'fake-model', FANOUT_WORKER_CONCURRENCY: 10 });
      // Papers 1..45 minus the unreadable ones (23: corrupt, 41: encrypted), which never reach the LLM.
      const ids = await createSampleLibrary(t.prisma, t.storage, 'team-a', 45);
      const id = await submit(t, ids);
      expect(await ended(t, id)).toMatchObject({ status: 'completed', total: 45, succeeded: 43, failed: 2 });
      expect(maxInFlight).toBeLessThanOrEqual(5);
      expect(maxInFlight).toBe(5); // strict, and the limit was reached
      // Every readable paper was called twice when its first answer was 429 or 500, once otherwise
      // (more only if a worker lost an item's lease, which counts another attempt).
      for (const [paper, n] of attempts) expect(n, paper).toBeGreaterThanOrEqual(Number(paper.split(' ')[1]) % 3 === 2 ? 1 : 2);
      const calls = [...attempts.values()].reduce((a, b) => a + b, 0);
      // Every call is an attempt of its paper's item, counted. An attempt may end before its call
      // reaches the model: on a starved machine a worker's claim can lapse, and the attempt is
      // aborted while it waits for the limit or while its request is on its way (seen in CI with
      // another app's test beside this one: 81 attempts and 81 slots taken for 74-77 calls). So
      // attempts can outnumber calls, never the other way round.
      const items = await t.prisma.$queryRaw<{ title: string; attempts: number; error: { code?: string } | null }[]>`
        SELECT snapshot->>'title' AS title, attempts, error FROM fanout_item WHERE task_id = ${id}::uuid AND status = 'succeeded'`;
      const callsOf = (title: string) => attempts.get(/paper \d+/.exec(title)?.[0] ?? '') ?? 0;
      const beyond = items.filter((i) => i.attempts !== callsOf(i.title)).map((i) => `${i.title}: ${i.attempts} attempts, ${callsOf(i.title)} calls, last error ${i.error?.code ?? 'none'}`);
      for (const item of items) expect(item.attempts, `${item.title} (${beyond.join('; ')})`).toBeGreaterThanOrEqual(callsOf(item.title));
      expect(items.reduce((n, i) => n + callsOf(i.title), 0)).toBe(calls); // every call was for a paper of the batch
      if (beyond.length > 0) console.log(`attempts beyond the model's calls: ${beyond.join('; ')}`);
      // Every call took a slot of the shared rate limit (600 a minute by default with an LLM), and
      // every slot taken was an attempt's (one at most each).
      const [taken] = await t.prisma.$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS n FROM fanout_slot WHERE name = 'llm_rpm' AND available_at > now()`;
      expect(taken!.n).toBeGreaterThanOrEqual(calls);
      expect(taken!.n).toBeLessThanOrEqual(items.reduce((n, i) => n + i.attempts, 0));
      if (beyond.length === 0) expect(taken!.n).toBe(calls);
      const rows = await t.prisma.aslExtraction.findMany({ where: { taskId: id } });
      expect(rows).toHaveLength(43);
      expect(new Set(rows.map((r) => r.model))).toEqual(new Set(['fake-model']));
    } finally {
      clearTimeout(gateTimer);
      llm.closeAllConnections();
      await new Promise((r) => llm.close(r));
    }
  });

  it('stores a model’s answer holding NUL or a lone surrogate at the first attempt, masks the platform’s key a provider echoes, and reads ids in either case once each', async () => {
    const KEY = 'sk-live-0123456789abcdefSECRET';
    const calls = new Map<string, number>();
    const llm = createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        const text: string = JSON.parse(raw).messages[1].content;
        const paper = /paper \d+/.exec(text)?.[0] ?? 'unknown';
        calls.set(paper, (calls.get(paper) ?? 0) + 1);
        if (paper === 'paper 3') {
          res.writeHead(401, { 'content-type': 'application/json' });
          return res.end(JSON.stringify({ error: { message: `Incorrect API key provided: ${KEY}. You can find your API key at …` } }));
        }
        const intervention = paper === 'paper 1' ? 'drug\u0000A' : 'drug \ud800 B';
        const data = { studyDesign: null, sampleSize: null, population: null, intervention: { value: intervention, span: { start: 0, end: 4, text: 'x\u0000y' } }, comparator: null, primaryOutcome: null };
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ choices: [{ message: { content: JSON.stringify(data) } }] }));
      });
    });
    await new Promise<void>((r) => llm.listen(0, '127.0.0.1', r));
    try {
      await using t = await aslTest();
      await t.api();
      await t.workers(1, { FANOUT_LLM_BASE_URL: `http://127.0.0.1:${(llm.address() as AddressInfo).port}/v1`, FANOUT_LLM_API_KEY: KEY, FANOUT_LLM_MODEL: 'fake-model' });
      const [one, two, three] = await createSampleLibrary(t.prisma, t.storage, 'team-a', 3);
      const id = await submit(t, [one!.toUpperCase(), two!, two!.toUpperCase(), three!]);
      expect(await ended(t, id)).toMatchObject({ status: 'completed', total: 3, succeeded: 2, failed: 1 });
      expect(((await (await t.call('GET', `/tasks/${id}`)).json()) as { summary: string }).summary).toBe('3 papers');
      // One call each: the answers were stored at once, and a 401 is not retried.
      expect(Object.fromEntries(calls)).toEqual({ 'paper 1': 1, 'paper 2': 1, 'paper 3': 1 });
      const rows = await t.prisma.aslExtraction.findMany({ where: { taskId: id }, orderBy: { filename: 'asc' } });
      expect(rows.map((r) => (r.fields as { intervention: { value: string; span: { text: string } } }).intervention)).toEqual([
        { value: 'drug\uFFFDA', span: { start: 0, end: 4, text: 'x\uFFFDy' } },
        { value: 'drug \uFFFD B', span: { start: 0, end: 4, text: 'x\uFFFDy' } },
      ]);
      const failed = (await (await t.call('GET', `/tasks/${id}/items?status=failed`)).json()) as { items: { key: string; error: { code: string; message: string } }[] };
      expect(failed.items).toHaveLength(1);
      expect(failed.items[0]!.key).toBe(three);
      expect(failed.items[0]!.error).toMatchObject({ code: 'http_401', message: expect.stringContaining('Incorrect API key provided: [api key].') });
      for (const path of [`/tasks/${id}/items`, `/tasks/${id}/results.csv`, `/tasks/${id}/results.json`]) expect(await (await t.call('GET', path)).text(), path).not.toContain(KEY);
    } finally {
      llm.closeAllConnections();
      await new Promise((r) => llm.close(r));
    }
  });

  it('lists a library of more than 1,000 papers newest first, page after page, and refuses a cursor it did not give', async () => {
    await using t = await aslTest();
    await t.api();
    // 1,005 papers, the five newest added in the same millisecond (the id breaks the tie).
    const base = Date.parse('2026-01-01T00:00:00Z');
    const rows = Array.from({ length: 1005 }, (_, i) => ({
      id: crypto.randomUUID(),
      owner: 'team-a',
      title: `Paper ${i}`,
      filename: `paper-${i}.pdf`,
      storageKey: `team-a/paper-${i}.pdf`,
      createdAt: new Date(base + Math.min(i, 1000) * 1000),
    }));
    await t.prisma.kbDocument.createMany({ data: rows });
    const newestFirst = [...rows].sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : -1)).map((r) => r.id);
    type Page = { documents: { id: string }[]; nextCursor: string | null };
    const walk = async (limit: number, maxPages = Number.POSITIVE_INFINITY) => {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const page: Page = (await (await t.call('GET', `/documents?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`)).json()) as Page;
        seen.push(...page.documents.map((d) => d.id));
        cursor = page.nextCursor;
        pages++;
      } while (cursor && pages < maxPages);
      return { seen, pages };
    };
    expect(await walk(1000)).toEqual({ seen: newestFirst, pages: 2 });
    expect(await walk(67)).toEqual({ seen: newestFirst, pages: 15 });
    // Pages of 2 end inside the five of the same millisecond: the tie is broken by the id, not skipped.
    expect((await walk(2, 5)).seen).toEqual(newestFirst.slice(0, 10));
    const id = crypto.randomUUID();
    for (const cursor of ['nope', Buffer.from('2026-01-01T00:00:00.000Z x').toString('base64url'), Buffer.from(`2026-13-45T99:99:99.999Z ${id}`).toString('base64url'), Buffer.from(`2026-02-30T00:00:00.000Z ${id}`).toString('base64url')]) {
      const res = await t.call('GET', `/documents?cursor=${cursor}`);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { issues: { field: string; rule: string }[] } }).error.issues.map((i) => [i.field, i.rule])).toEqual([['query.cursor', 'invalid_cursor']]);
    }
    // Another tenant's library is its own.
    expect(((await (await t.call('GET', '/documents', { token: TEST_TOKEN.b })).json()) as Page).documents).toEqual([]);
  });

  it('works from the snapshot when a document is deleted after submission; a missing file or a foreign document fails with a reason', async () => {
    await using t = await aslTest();
    await t.api();
    const [kept, deleted, fileless] = await createSampleLibrary(t.prisma, t.storage, 'team-a', 3);
    const [foreign] = await createSampleLibrary(t.prisma, t.storage, 'team-b', 1, 100);
    const row = await t.prisma.kbDocument.findUniqueOrThrow({ where: { id: fileless! } });
    await import('node:fs/promises').then((fs) => fs.rm(`${t.storageDir}/${row.storageKey}`));
    const id = await submit(t, [kept!, deleted!, fileless!, foreign!]);
    // The manager runs in a worker: snapshot first, then delete the library entry.
    await t.workers(1);
    await waitFor(async () => ((await (await t.call('GET', `/tasks/${id}`)).json()) as { dispatched: boolean }).dispatched, { message: 'dispatched' });
    await t.prisma.kbDocument.delete({ where: { id: deleted! } });
    const task = await ended(t, id);
    expect(task).toMatchObject({ total: 4, succeeded: 2, failed: 2 });
    const items = (await (await t.call('GET', `/tasks/${id}/items`)).json()) as { items: { key: string; status: string; error: { code: string; message: string } | null }[] };
    const byKey = new Map(items.items.map((i) => [i.key, i]));
    expect(byKey.get(deleted!)?.status).toBe('succeeded');
    expect(byKey.get(fileless!)?.error).toMatchObject({ code: 'missing_file', message: expect.stringContaining('is missing from storage') });
    expect(byKey.get(foreign!)?.error).toMatchObject({ code: 'document_not_found', message: expect.stringContaining('is not in your library') });
  });

  it('retention and a delete take a task’s extractions with its items', async () => {
    await using t = await aslTest({ FANOUT_RETENTION_DAYS: 1 });
    await t.api();
    await t.workers(1);
    const ids = await createSampleLibrary(t.prisma, t.storage, 'team-a', 4);
    const old = await submit(t, ids.slice(0, 2));
    const other = await submit(t, ids.slice(2));
    expect(await ended(t, old)).toMatchObject({ status: 'completed', succeeded: 2 });
    expect(await ended(t, other)).toMatchObject({ status: 'completed', succeeded: 2 });
    const extractions = (taskId: string) => t.prisma.aslExtraction.count({ where: { taskId } });
    expect([await extractions(old), await extractions(other)]).toEqual([2, 2]);

    // Finished two days ago (its fan-in run and its ending announced): the worker's maintenance
    // loop deletes its items, and the app's hook its extractions.
    await waitFor(async () => (await t.prisma.$queryRaw<{ ready: boolean }[]>`SELECT announced_round >= round AND fanin_round >= round AS ready FROM fanout_task WHERE id = ${old}::uuid`)[0]?.ready, {
      message: 'the task announced and fanned in',
    });
    await t.prisma.$executeRaw`UPDATE fanout_task SET completed_at = now() - interval '2 days' WHERE id = ${old}::uuid`;
    await waitFor(async () => (await extractions(old)) === 0 && (await t.prisma.$queryRaw<{ purging: boolean }[]>`SELECT purging FROM fanout_task WHERE id = ${old}::uuid`)[0]?.purging === false, {
      message: 'the old task’s extractions deleted',
    });
    expect((await t.call('GET', `/tasks/${old}/results.json`)).status).toBe(410);
    expect(await extractions(other)).toBe(2);

    const deleted = await t.call('DELETE', `/tasks/${other}`);
    expect(deleted.status).toBe(204);
    expect(await extractions(other)).toBe(0);
    expect((await t.call('GET', `/tasks/${other}`)).status).toBe(404);
  });

  it('keeps tenants apart on every route, events and exports included', async () => {
    await using t = await aslTest();
    await t.api();
    await t.workers(1);
    const ids = await createSampleLibrary(t.prisma, t.storage, 'team-a', 2);
    const id = await submit(t, ids);
    await ended(t, id);
    for (const [method, path] of [
      ['GET', `/tasks/${id}`],
      ['GET', `/tasks/${id}/items`],
      ['GET', `/tasks/${id}/events`],
      ['POST', `/tasks/${id}/cancel`],
      ['POST', `/tasks/${id}/retry-failed`],
      ['GET', `/tasks/${id}/results.json`],
      ['GET', `/tasks/${id}/results.csv`],
    ] as const) {
      const res = await t.call(method, path, { token: TEST_TOKEN.b });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('not_found');
    }
    const docs = (await (await t.call('GET', '/documents', { token: TEST_TOKEN.b })).json()) as { documents: unknown[] };
    expect(docs.documents).toEqual([]);
    const tasks = (await (await t.call('GET', '/tasks', { token: TEST_TOKEN.b })).json()) as { tasks: unknown[] };
    expect(tasks.tasks).toEqual([]);
  });

  it('answers bad input with 400 naming the field and the rule', async () => {
    await using t = await aslTest();
    await t.api();
    const cases: Array<[string, string, unknown, string]> = [
      ['POST', '/tasks', { input: { documentIds: [] } }, 'body.input.documentIds'],
      ['POST', '/tasks', { input: { documentIds: ['not-an-id'] } }, 'body.input.documentIds.0'],
      ['POST', '/tasks', { input: {} }, 'body.input.documentIds'],
      ['GET', '/tasks/not-an-id/results.csv', undefined, 'params.id'],
    ];
    for (const [method, path, body, field] of cases) {
      const res = await t.call(method, path, body === undefined ? {} : { body });
      expect(res.status, `${method} ${path}`).toBe(400);
      const error = ((await res.json()) as { error: { issues: { field: string; rule: string }[] } }).error;
      expect(error.issues.map((i) => i.field)).toContain(field);
    }
    expect((await t.call('GET', '/documents?limit=0')).status).toBe(400);
    expect((await t.call('GET', '/documents', { token: 'nope' })).status).toBe(401);
  });

  it('a cancel made on the API process reaches the event stream', async () => {
    await using t = await aslTest();
    await t.api(); // no workers: the task stays unfinished until the cancel
    const ids = await createSampleLibrary(t.prisma, t.storage, 'team-a', 3);
    const id = await submit(t, ids);
    const res = await t.call('GET', `/tasks/${id}/events`);
    const sse = collectEventStream(res.body!);
    await waitFor(() => sse.messages.length === 1, { message: 'the current state' });
    expect((await t.call('POST', `/tasks/${id}/cancel`)).status).toBe(200);
    await waitFor(() => sse.messages.some((m) => m.event === 'task.cancelled'), { timeoutMs: 10_000, message: 'the cancelled event' });
    await sse.cancel();
  });
});
