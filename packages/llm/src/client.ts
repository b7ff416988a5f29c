import { parseRetryAfter, PermanentError, type ItemContext } from '@fanout/core';
import type { LlmConfig } from './config.ts';

/** The names of the shared limits: every app's calls count against the same slots. */
export const LLM_LIMIT = 'llm';
export const LLM_RATE_LIMIT = 'llm_rpm';

/**
 * An HTTP answer that was not 2xx; the default classifier reads `status` and `retryAfterMs` (429
 * and 5xx retried, after the server's `retry-after-ms` or `Retry-After` when it gives one).
 */
export class LlmHttpError extends Error {
  override name = 'LlmHttpError';
  readonly status: number;
  readonly headers: Headers;
  /** The wait the server asked for, from `retry-after-ms` (OpenAI's) or `Retry-After`. */
  readonly retryAfterMs: number | undefined;
  constructor(status: number, headers: Headers, body: string) {
    super(`LLM answered HTTP ${status}: ${body.slice(0, 200)}`);
    this.status = status;
    this.headers = headers;
    this.retryAfterMs = retryAfterOf(headers);
  }
}

function retryAfterOf(headers: Headers): number | undefined {
  const ms = headers.get('retry-after-ms')?.trim();
  if (ms && /^\d+(\.\d+)?$/.test(ms)) return Math.ceil(Number(ms));
  return parseRetryAfter(headers.get('retry-after'));
}

/** An answer that is not what was asked for (not JSON, not the schema): the app decides whether to retry. */
export class LlmAnswerError extends Error {
  override name = 'LlmAnswerError';
  readonly code = 'llm_bad_answer';
}

/**
 * The model declined to answer: a refusal (`message.refusal`) or its content filter
 * (`finish_reason: "content_filter"`). At temperature 0 the same request is declined again, so it
 * is permanent (`llm_refused`): retrying would only pay for more refusals.
 */
export class LlmRefusalError extends PermanentError {
  override name = 'LlmRefusalError';
  constructor(message: string) {
    super(message, { code: 'llm_refused' });
  }
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

/** An answer's body is read up to this many bytes (a chat completion is kilobytes). */
export const DEFAULT_MAX_ANSWER_BYTES = 4 * 1024 * 1024;
/** An error answer's body is read up to this many bytes (its first 200 characters are kept). */
const MAX_ERROR_BYTES = 16 * 1024;

/**
 * One chat completion from an OpenAI-compatible server; returns the answer's text. Non-2xx answers
 * throw `LlmHttpError` (its status and `Retry-After` drive the retry; the API key is masked in its
 * message, where a server may echo it); a timeout aborts (transient); a body that is not a chat
 * completion, or is larger than `maxAnswerBytes`, throws `LlmAnswerError`. No limits: see `chat`.
 */
export async function chatCompletion(config: Pick<LlmConfig, 'baseUrl' | 'apiKey' | 'model' | 'timeoutMs'> & { maxAnswerBytes?: number }, request: ChatRequest): Promise<string> {
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
  if (!response.ok) {
    const { text } = await readCapped(response, MAX_ERROR_BYTES);
    throw new LlmHttpError(response.status, response.headers, masked(text, config.apiKey));
  }
  const maxBytes = config.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES;
  const { text: body, cut } = await readCapped(response, maxBytes);
  if (cut) throw new LlmAnswerError(`the LLM answer is over ${maxBytes} bytes (it was cut there)`);
  let choice: { message?: { content?: unknown; refusal?: unknown }; finish_reason?: unknown } | undefined;
  try {
    choice = (JSON.parse(body) as { choices?: (typeof choice)[] }).choices?.[0];
  } catch (error) {
    throw new LlmAnswerError(`the LLM answer is not a chat completion: ${(error as Error).message}`, { cause: error });
  }
  const refusal = choice?.message?.refusal;
  if (typeof refusal === 'string' && refusal !== '') throw new LlmRefusalError(`the model refused: ${refusal.slice(0, 200)}`);
  if (choice?.finish_reason === 'content_filter') throw new LlmRefusalError("the model's content filter stopped its answer");
  const content = choice?.message?.content;
  if (typeof content !== 'string') throw new LlmAnswerError('the LLM answer is not a chat completion: no choices[0].message.content');
  return content;
}

/** Up to `maxBytes` of a body as text; the rest is not read (the connection is let go). */
async function readCapped(response: Response, maxBytes: number): Promise<{ text: string; cut: boolean }> {
  if (!response.body) return { text: '', cut: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (size + value.byteLength > maxBytes) {
      chunks.push(value.subarray(0, maxBytes - size));
      await reader.cancel().catch(() => {});
      return { text: new TextDecoder().decode(Buffer.concat(chunks)), cut: true };
    }
    chunks.push(value);
    size += value.byteLength;
  }
  return { text: new TextDecoder().decode(Buffer.concat(chunks)), cut: false };
}

/** The text with the API key, should a server echo it, masked: it must not reach an item's error. */
function masked(text: string, apiKey: string): string {
  return apiKey.length >= 8 ? text.replaceAll(apiKey, '[api key]') : text;
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
