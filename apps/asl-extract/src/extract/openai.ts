import { TransientError } from '@fanout/core';
import { studyDataSchema, type Extractor, type StudyData } from './study.ts';

/** An HTTP answer that was not 2xx; the default classifier reads `status` and `headers`. */
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

const PROMPT_VERSION = 'study-data-v1';
const SYSTEM = `You extract study data from the full text of a research paper.
Answer with one JSON object with the keys studyDesign, sampleSize, population, intervention,
comparator, primaryOutcome. Each is null when the paper does not state it, otherwise
{"value": <string, or an integer for sampleSize>, "span": {"start": <offset>, "end": <offset>, "text": <the exact text>}}
where start and end are character offsets into the text you were given.`;

export interface OpenAiExtractorOptions {
  /** e.g. https://api.openai.com/v1 or any OpenAI-compatible server. */
  baseUrl: string;
  apiKey: string;
  model: string;
  /** Text beyond this is cut (the model's context is finite). @default 60000 */
  maxChars?: number;
  /** @default 120000 */
  timeoutMs?: number;
}

/**
 * An OpenAI-compatible chat-completions client. HTTP errors keep their status and headers, so
 * the default classifier retries 429 (after Retry-After) and 5xx and fails other 4xx at once.
 */
export class OpenAiExtractor implements Extractor {
  readonly model: string;
  readonly promptVersion = PROMPT_VERSION;
  readonly #options: Required<OpenAiExtractorOptions>;

  constructor(options: OpenAiExtractorOptions) {
    this.#options = { maxChars: 60_000, timeoutMs: 120_000, ...options };
    this.model = options.model;
  }

  async extract(text: string, { signal }: { signal: AbortSignal }): Promise<StudyData> {
    const response = await fetch(`${this.#options.baseUrl.replace(/\/$/, '')}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${this.#options.apiKey}` },
      body: JSON.stringify({
        model: this.model,
        temperature: 0,
        response_format: { type: 'json_object' },
        messages: [
          { role: 'system', content: SYSTEM },
          { role: 'user', content: text.slice(0, this.#options.maxChars) },
        ],
      }),
      signal: AbortSignal.any([signal, AbortSignal.timeout(this.#options.timeoutMs)]),
    });
    const body = await response.text();
    if (!response.ok) throw new LlmHttpError(response.status, response.headers, body);
    let content: unknown;
    try {
      content = JSON.parse((JSON.parse(body) as { choices: { message: { content: string } }[] }).choices[0]!.message.content);
    } catch (error) {
      throw new TransientError('the LLM answer was not the JSON asked for', { cause: error, code: 'llm_bad_answer' });
    }
    const parsed = studyDataSchema.safeParse(content);
    if (!parsed.success) throw new TransientError(`the LLM answer does not match the study schema: ${parsed.error.message}`, { code: 'llm_bad_answer' });
    return parsed.data;
  }
}
