import { defaultClassifier } from '@fanout/core';
import { describe, expect, it } from 'vitest';
import { chatCompletion, LlmAnswerError, parseJsonAnswer, startSimulatedLlm } from '../src/index.ts';

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
});
