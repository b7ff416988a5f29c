import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { defaultClassifier } from '@fanout/core';
import { describe, expect, it } from 'vitest';
import { chatCompletion, LlmAnswerError, LlmHttpError, LlmRefusalError, parseJsonAnswer, startSimulatedLlm } from '../src/index.ts';

const signal = new AbortController().signal;
const config = (baseUrl: string) => ({ baseUrl, apiKey: 'k', model: 'm', timeoutMs: 10_000 });

describe('the model client and the simulated model', () => {
  it('answers with the app’s text, and has a real model’s bad days: 429 with Retry-After, and 503', async () => {
    // Fates in turn: ok, rate limited, unavailable (the second number of each pair is the latency).
    const fates = [0.9, 0.5, 0.01, 0.5, 0.07, 0.5];
    await using llm = await startSimulatedLlm({ latencyMs: 5, rateLimitedShare: 0.05, unavailableShare: 0.05, random: () => fates.shift() ?? 0.9, answer: (m) => JSON.stringify({ echo: m.at(-1)?.content }) });
    const ask = () => chatCompletion(config(llm.baseUrl), { messages: [{ role: 'user', content: 'hello' }], signal });
    expect(parseJsonAnswer(await ask())).toEqual({ echo: 'hello' });
    const limited = await ask().catch((e: unknown) => e);
    expect(defaultClassifier(limited)).toMatchObject({ kind: 'transient', code: 'http_429', retryAfterMs: 1000 });
    const unavailable = await ask().catch((e: unknown) => e);
    expect(defaultClassifier(unavailable)).toMatchObject({ kind: 'transient', code: 'http_503' });
    expect(llm.calls).toMatchObject({ total: 3, rateLimited: 1, unavailable: 1 });
  });

  it('says when an answer is not JSON, and passes plain text through when JSON was not asked for', async () => {
    expect(() => parseJsonAnswer('not json')).toThrow(LlmAnswerError);
    await using llm = await startSimulatedLlm({ latencyMs: 1, rateLimitedShare: 0, unavailableShare: 0, answer: () => 'plain' });
    expect(await chatCompletion(config(llm.baseUrl), { messages: [{ role: 'user', content: 'x' }], json: false, signal })).toBe('plain');
  });

  describe('against a provider that misbehaves', () => {
    const KEY = 'sk-test-0123456789abcdefSECRET';
    /** A real server on loopback answering each call with the next of `answers`. */
    async function provider(answers: ((res: import('node:http').ServerResponse) => void)[]): Promise<{ baseUrl: string; server: Server; [Symbol.asyncDispose](): Promise<void> }> {
      const server = createServer((req, res) => {
        req.resume();
        req.on('end', () => (answers.shift() ?? ((r) => r.writeHead(500).end()))(res));
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return {
        baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
        server,
        [Symbol.asyncDispose]: () => new Promise<void>((resolve) => server.close(() => resolve())),
      };
    }
    const ask = (baseUrl: string, extra: { maxAnswerBytes?: number } = {}) =>
      chatCompletion({ baseUrl, apiKey: KEY, model: 'm', timeoutMs: 10_000, ...extra }, { messages: [{ role: 'user', content: 'x' }], signal }).catch((e: unknown) => e as Error);

    it('masks the API key a provider echoes in an error, which items store and tenants read', async () => {
      await using p = await provider([(res) => res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `Incorrect API key provided: ${KEY}.` } }))]);
      const error = (await ask(p.baseUrl)) as Error;
      expect(error).toBeInstanceOf(LlmHttpError);
      expect(error.message).not.toContain(KEY);
      expect(error.message).toContain('Incorrect API key provided: [api key].');
      expect(defaultClassifier(error)).toMatchObject({ kind: 'permanent', code: 'http_401' });
    });

    it('follows retry-after-ms (OpenAI’s) and a 503’s Retry-After', async () => {
      await using p = await provider([
        (res) => res.writeHead(429, { 'retry-after-ms': '1500', 'retry-after': '2' }).end('slow down'),
        (res) => res.writeHead(503, { 'retry-after': '20' }).end('maintenance'),
      ]);
      expect(defaultClassifier(await ask(p.baseUrl))).toMatchObject({ kind: 'transient', code: 'http_429', retryAfterMs: 1500 });
      expect(defaultClassifier(await ask(p.baseUrl))).toMatchObject({ kind: 'transient', code: 'http_503', retryAfterMs: 20_000 });
    });

    it('takes a refusal or the content filter as permanent (the same request is declined again), and an answer without content as a bad answer', async () => {
      const completion = (choice: object) => (res: import('node:http').ServerResponse) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ choices: [choice] }));
      await using p = await provider([
        completion({ message: { role: 'assistant', content: null, refusal: 'I can’t help with that.' }, finish_reason: 'stop' }),
        completion({ message: { role: 'assistant', content: '{"partial":' }, finish_reason: 'content_filter' }),
        completion({ message: { role: 'assistant', content: null }, finish_reason: 'stop' }),
      ]);
      const refused = await ask(p.baseUrl);
      expect(refused).toBeInstanceOf(LlmRefusalError);
      expect(defaultClassifier(refused)).toEqual({ kind: 'permanent', code: 'llm_refused', message: 'the model refused: I can’t help with that.' });
      expect(defaultClassifier(await ask(p.baseUrl))).toMatchObject({ kind: 'permanent', code: 'llm_refused' });
      expect(await ask(p.baseUrl)).toBeInstanceOf(LlmAnswerError);
    });

    it('stops reading an answer past its byte limit and says so', async () => {
      const completion = JSON.stringify({ choices: [{ message: { content: '{"ok":true}' } }] });
      const huge = (res: import('node:http').ServerResponse) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        // 64 MB of whitespace before a valid completion: the client reads 1 MB of it.
        const block = ' '.repeat(1024 * 1024);
        let sent = 0;
        const more = () => {
          while (sent < 64) {
            sent++;
            if (!res.write(block)) return void res.once('drain', more);
          }
          res.end(completion);
        };
        res.on('error', () => {});
        more();
      };
      await using p = await provider([huge, (res) => res.writeHead(200, { 'content-type': 'application/json' }).end(completion)]);
      const error = (await ask(p.baseUrl, { maxAnswerBytes: 1024 * 1024 })) as Error;
      expect(error).toBeInstanceOf(LlmAnswerError);
      expect(error.message).toContain('over 1048576 bytes');
      expect(await ask(p.baseUrl, { maxAnswerBytes: 1024 * 1024 })).toBe('{"ok":true}');
    });
  });
});
