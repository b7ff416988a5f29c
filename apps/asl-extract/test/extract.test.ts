import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { defaultClassifier } from '@fanout/core';
import { describe, expect, it } from 'vitest';
import { OfflineExtractor } from '../src/extract/offline.ts';
import { OpenAiExtractor } from '../src/extract/openai.ts';
import { studyDataSchema } from '../src/extract/study.ts';
import { encrypt, renderPdf, samplePaperText } from '../src/library/sample.ts';
import { FileStorage } from '../src/library/storage.ts';
import { PdfReader } from '../src/pdf/text.ts';

describe('reading papers', () => {
  it('reads the text of a PDF, and fails corrupt and encrypted files permanently', async () => {
    const { lines } = samplePaperText(7);
    const bytes = await renderPdf(lines);
    await using reader = Object.assign(new PdfReader({ threads: 1 }), { [Symbol.asyncDispose]: () => reader.close() });
    expect(await reader.text(bytes.slice())).toContain(lines[3]);
    await expect(reader.text(bytes.slice(0, 300))).rejects.toMatchObject({ name: 'PermanentError', code: 'corrupt_pdf' });
    await expect(reader.text(encrypt(bytes))).rejects.toMatchObject({ name: 'PermanentError', code: 'encrypted_pdf' });
    await expect(reader.text(new TextEncoder().encode('hello, not a pdf'))).rejects.toMatchObject({ code: 'corrupt_pdf' });
  });

  it('refuses a storage key that is not one, or that leaves the root, permanently (the same at every attempt)', async () => {
    const storage = new FileStorage('/var/empty/asl-files');
    for (const key of ['../etc/passwd', 'a/../../b', '/abs', 'spaces are not keys', '']) {
      expect(() => storage.pathOf(key), key).toThrow(expect.objectContaining({ name: 'PermanentError', code: 'invalid_storage_key' }));
      await expect(storage.size(key), key).rejects.toMatchObject({ name: 'PermanentError', code: 'invalid_storage_key' });
    }
    expect(storage.pathOf('docs/a.pdf')).toBe('/var/empty/asl-files/docs/a.pdf');
  });

  it('the offline extractor finds the study data and the span each value came from', async () => {
    const text = [
      'Methods: We conducted a randomised controlled trial of 240 adults with type 2 diabetes in 12 centres.',
      'Intervention: metformin 500 mg twice daily.',
      'Comparator: placebo.',
      'Primary outcome: change in HbA1c at 24 weeks.',
    ].join('\n');
    const data = await new OfflineExtractor().extract(text);
    expect(data.studyDesign?.value).toBe('randomised controlled trial');
    expect(data.sampleSize?.value).toBe(240);
    expect(data.population?.value).toBe('adults with type 2 diabetes');
    expect(data.intervention?.value).toBe('metformin 500 mg twice daily');
    expect(data.comparator?.value).toBe('placebo');
    expect(data.primaryOutcome?.value).toBe('change in HbA1c at 24 weeks');
    for (const field of Object.values(data)) expect(text.slice(field!.span.start, field!.span.end)).toBe(field!.span.text);
    // A count the schema cannot take is no sample size; the other fields are kept.
    for (const odd of ['a cohort study of 0 patients with asthma.', 'We enrolled 12345678901234567890 participants.']) {
      const found = await new OfflineExtractor().extract(`${odd}\nIntervention: inhaler.`);
      expect(found.sampleSize).toBeNull();
      expect(found.intervention?.value).toBe('inhaler');
      expect(studyDataSchema.safeParse(found).success).toBe(true);
    }
    expect(await new OfflineExtractor().extract('nothing to see here')).toEqual({
      studyDesign: null,
      sampleSize: null,
      population: null,
      intervention: null,
      comparator: null,
      primaryOutcome: null,
    });
  });
});

describe('OpenAI-compatible extractor against a real HTTP server', () => {
  async function llm(answer: (body: any) => { status: number; headers?: Record<string, string>; body: string }) {
    const seen: any[] = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        seen.push({ body, auth: req.headers.authorization, path: req.url });
        const a = answer(body);
        res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers });
        res.end(a.body);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    return { url, seen, close: () => new Promise((r) => server.close(r)) };
  }
  const data = { studyDesign: { value: 'cohort', span: { start: 0, end: 6, text: 'cohort' } }, sampleSize: null, population: null, intervention: null, comparator: null, primaryOutcome: null };
  const signal = new AbortController().signal;

  it('sends the text with the model and key, and validates the answer', async () => {
    const server = await llm(() => ({ status: 200, body: JSON.stringify({ choices: [{ message: { content: JSON.stringify(data) } }] }) }));
    const extractor = new OpenAiExtractor({ baseUrl: server.url, apiKey: 'sk-test', model: 'gpt-test' });
    expect(await extractor.extract('cohort study text', { signal })).toEqual(data);
    expect(server.seen[0]).toMatchObject({ path: '/v1/chat/completions', auth: 'Bearer sk-test', body: { model: 'gpt-test', temperature: 0 } });
    // A paper's text is cut at 60,000 characters, never inside a character (math italics are two).
    await extractor.extract(`${'a'.repeat(59_999)}𝑥 and more`, { signal });
    const sent: string = server.seen[1].body.messages[1].content;
    expect(sent.isWellFormed()).toBe(true);
    expect(sent).toBe(`${'a'.repeat(59_999)}\uFFFD`);
    await server.close();
  });

  it('turns 429 (with Retry-After), 500, 400 and a refusal into errors the classifier sorts', async () => {
    const answers = [
      { status: 429, headers: { 'retry-after': '3' }, body: '{"error":"slow down"}' },
      { status: 500, body: '{}' },
      { status: 400, body: '{"error":"bad request"}' },
      { status: 200, body: JSON.stringify({ choices: [{ message: { content: 'not json' } }] }) },
      { status: 200, body: JSON.stringify({ choices: [{ message: { content: null, refusal: 'I cannot help with that.' }, finish_reason: 'stop' }] }) },
    ];
    const server = await llm(() => answers.shift()!);
    const extractor = new OpenAiExtractor({ baseUrl: server.url, apiKey: 'k', model: 'm' });
    const classify = async () => defaultClassifier(await extractor.extract('text', { signal }).catch((e: unknown) => e));
    expect(await classify()).toMatchObject({ kind: 'transient', code: 'http_429', retryAfterMs: 3000 });
    expect(await classify()).toMatchObject({ kind: 'transient', code: 'http_500' });
    expect(await classify()).toMatchObject({ kind: 'permanent', code: 'http_400' });
    expect(await classify()).toMatchObject({ kind: 'transient', code: 'llm_bad_answer' });
    // Declined at temperature 0 is declined again: the paper fails at once, no more paid calls.
    expect(await classify()).toMatchObject({ kind: 'permanent', code: 'llm_refused' });
    await server.close();
  });
});
