import { z } from 'zod';

const rule = (text: string) => ({ error: text });
const positiveInt = (max: number) => z.coerce.number(rule(`must be an integer from 1 to ${max}`)).int(rule(`must be an integer from 1 to ${max}`)).min(1, rule(`must be an integer from 1 to ${max}`)).max(max, rule(`must be an integer from 1 to ${max}`));

/**
 * The model every app of the platform calls, read from the environment with the kit's common
 * variables (`env: { ...llmEnv, ... }` in `defineApp`). One configuration, one pair of limits:
 * the apps share the model's capacity, so they share the limits that protect it.
 */
export const llmEnv = {
  /** An OpenAI-compatible API, e.g. https://api.openai.com/v1. Unset: the apps' offline behaviour. */
  FANOUT_LLM_BASE_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
  FANOUT_LLM_API_KEY: z.string().default(''),
  FANOUT_LLM_MODEL: z.string().min(1).default('gpt-4o-mini'),
  /** Calls in flight across every worker process of every app. */
  FANOUT_LLM_CONCURRENCY: positiveInt(1000).default(5),
  /** Calls started per minute across every worker process of every app. */
  FANOUT_LLM_PER_MINUTE: positiveInt(1_000_000).default(600),
  /** A call slower than this is cut and retried. */
  FANOUT_LLM_TIMEOUT_MS: positiveInt(3_600_000).default(120_000),
};

export interface LlmConfig {
  baseUrl: string;
  apiKey: string;
  model: string;
  concurrency: number;
  perMinute: number;
  timeoutMs: number;
}

/** The model configured in an environment read with `llmEnv`, or null when none is. */
export function llmConfigOf(env: { FANOUT_LLM_BASE_URL?: string | undefined; FANOUT_LLM_API_KEY: string; FANOUT_LLM_MODEL: string; FANOUT_LLM_CONCURRENCY: number; FANOUT_LLM_PER_MINUTE: number; FANOUT_LLM_TIMEOUT_MS: number }): LlmConfig | null {
  if (!env.FANOUT_LLM_BASE_URL) return null;
  return {
    baseUrl: env.FANOUT_LLM_BASE_URL,
    apiKey: env.FANOUT_LLM_API_KEY,
    model: env.FANOUT_LLM_MODEL,
    concurrency: env.FANOUT_LLM_CONCURRENCY,
    perMinute: env.FANOUT_LLM_PER_MINUTE,
    timeoutMs: env.FANOUT_LLM_TIMEOUT_MS,
  };
}
