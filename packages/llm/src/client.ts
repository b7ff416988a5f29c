import type { ItemContext } from '@fanout/core';
import type { LlmConfig } from './config.ts';

/** The names of the shared limits: every app's calls count against the same slots. */
export const LLM_LIMIT = 'llm';
export const LLM_RATE_LIMIT = 'llm_rpm';

/** An HTTP answer that was not 2xx; the default classifier reads `status` and `headers` (429, 5xx retried). */
export class LlmHttpError extends Error {
  override name = 'LlmHttpError';
  readonly status: number;
  readonly headers: Headers;
  constructor(status: number, headers: Headers, body: string) {
    super(`LLM answered HTTP ${status}: ${body.slice(0, 200)}`);
    this.status = status;
    this.headers = headers;
  }
}

/** An answer that is not what was asked for (not JSON, not the schema): the app decides whether to retry. */
export class LlmAnswerError extends Error {
  override name = 'LlmAnswerError';
  readonly code = 'llm_bad_answer';
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface ChatRequest {
  messages: readonly ChatMessage[];
  /** Ask for a JSON object (`response_format`). @default true */
  json?: boolean;
  signal: AbortSignal;
}

/**
 * Runs `call` under the platform's shared limits: a slot of the global concurrency limit `llm`
 * for the whole call, and a take of the rate limit `llm_rpm` before it starts. Every app passes the
 * same configuration, so their calls together never exceed what the model allows.
 */
export function withLlmLimits<T>(ctx: Pick<ItemContext, 'limits' | 'signal'>, config: Pick<LlmConfig, 'concurrency' | 'perMinute'>, call: () => Promise<T>): Promise<T> {
  return ctx.limits.global(LLM_LIMIT, { limit: config.concurrency }).run(
    async () => {
      await ctx.limits.rate(LLM_RATE_LIMIT, { limit: config.perMinute, intervalMs: 60_000 }).take({ signal: ctx.signal });
      return call();
    },
    { signal: ctx.signal },
  );
}

/**
 * One chat completion from an OpenAI-compatible server; returns the answer's text. Non-2xx answers
 * throw `LlmHttpError` (its status and `Retry-After` drive the retry); a timeout aborts (transient);
 * a body that is not a chat completion throws `LlmAnswerError`. No limits: see `chat`.
 */
export async function chatCompletion(config: Pick<LlmConfig, 'baseUrl' | 'apiKey' | 'model' | 'timeoutMs'>, request: ChatRequest): Promise<string> {
  const response = await fetch(`${config.baseUrl.replace(/\/$/, '')}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${config.apiKey}` },
    body: JSON.stringify({
      model: config.model,
      temperature: 0,
      ...((request.json ?? true) ? { response_format: { type: 'json_object' } } : {}),
      messages: request.messages,
    }),
    signal: AbortSignal.any([request.signal, AbortSignal.timeout(config.timeoutMs)]),
  });
  const body = await response.text();
  if (!response.ok) throw new LlmHttpError(response.status, response.headers, body);
  try {
    const content = (JSON.parse(body) as { choices?: { message?: { content?: unknown } }[] }).choices?.[0]?.message?.content;
    if (typeof content !== 'string') throw new Error('no choices[0].message.content');
    return content;
  } catch (error) {
    throw new LlmAnswerError(`the LLM answer is not a chat completion: ${(error as Error).message}`, { cause: error });
  }
}

/** A chat completion under the shared limits (`withLlmLimits` around `chatCompletion`). */
export function chat(ctx: Pick<ItemContext, 'limits' | 'signal'>, config: LlmConfig, request: Omit<ChatRequest, 'signal'>): Promise<string> {
  return withLlmLimits(ctx, config, () => chatCompletion(config, { ...request, signal: ctx.signal }));
}

/** The answer's text as JSON, or an `LlmAnswerError` saying why not. */
export function parseJsonAnswer(content: string): unknown {
  try {
    return JSON.parse(content);
  } catch (error) {
    throw new LlmAnswerError(`the LLM answer is not JSON: ${content.slice(0, 120)}`, { cause: error });
  }
}
