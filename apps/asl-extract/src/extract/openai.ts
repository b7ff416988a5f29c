import { TransientError } from '@fanout/core';
import { chatCompletion, LlmAnswerError, parseJsonAnswer, type LlmConfig } from '@fanout/llm';
import { studyDataSchema, type Extractor, type StudyData } from './study.ts';

const PROMPT_VERSION = 'study-data-v1';
const SYSTEM = `You extract study data from the full text of a research paper.
Answer with one JSON object with the keys studyDesign, sampleSize, population, intervention,
comparator, primaryOutcome. Each is null when the paper does not state it, otherwise
{"value": <string, or an integer for sampleSize>, "span": {"start": <offset>, "end": <offset>, "text": <the exact text>}}
where start and end are character offsets into the text you were given.`;

/** Text beyond this is cut (the model's context is finite). */
const MAX_CHARS = 60_000;

/**
 * Study data from an OpenAI-compatible model (the platform's shared configuration, `@fanout/llm`).
 * HTTP errors keep their status and headers, so the classifier retries 429 (after Retry-After) and
 * 5xx and fails other 4xx at once; an answer that is not the study schema is retried too (models
 * answer differently on a second try); a refusal fails the paper at once (`llm_refused`).
 */
export class OpenAiExtractor implements Extractor {
  readonly model: string;
  readonly promptVersion = PROMPT_VERSION;
  readonly usesLlm = true;
  readonly #config: Pick<LlmConfig, 'baseUrl' | 'apiKey' | 'model' | 'timeoutMs'>;

  constructor(config: Pick<LlmConfig, 'baseUrl' | 'apiKey' | 'model'> & { timeoutMs?: number }) {
    this.#config = { timeoutMs: 120_000, ...config };
    this.model = config.model;
  }

  async extract(text: string, { signal }: { signal: AbortSignal }): Promise<StudyData> {
    let content: unknown;
    try {
      content = parseJsonAnswer(
        await chatCompletion(this.#config, {
          messages: [
            { role: 'system', content: SYSTEM },
            // Cut where it may split a character in two: the half left is made U+FFFD.
            { role: 'user', content: text.slice(0, MAX_CHARS).toWellFormed() },
          ],
          signal,
        }),
      );
    } catch (error) {
      if (error instanceof LlmAnswerError) throw new TransientError(error.message, { cause: error, code: 'llm_bad_answer' });
      throw error;
    }
    const parsed = studyDataSchema.safeParse(content);
    if (!parsed.success) throw new TransientError(`the LLM answer does not match the study schema: ${parsed.error.message}`, { code: 'llm_bad_answer' });
    return parsed.data;
  }
}
