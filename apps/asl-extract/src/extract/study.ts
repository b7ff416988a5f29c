import { storableText } from '@fanout/core';
import { z } from 'zod';

/** Where in the paper's text a value came from. */
export const spanSchema = z.object({ start: z.number().int().min(0), end: z.number().int().min(0), text: z.string() });

const field = <T extends z.ZodType>(value: T) => z.object({ value, span: spanSchema }).nullable();

/** The study data extracted from one paper; a field the paper does not state is null. */
export const studyDataSchema = z.object({
  studyDesign: field(z.string().min(1)),
  sampleSize: field(z.number().int().min(1)),
  population: field(z.string().min(1)),
  intervention: field(z.string().min(1)),
  comparator: field(z.string().min(1)),
  primaryOutcome: field(z.string().min(1)),
});
export type StudyData = z.infer<typeof studyDataSchema>;

/** The longest value or span text stored; a model's answer is cut there (its span still says where it is). */
export const MAX_FIELD_CHARS = 2_000;

/**
 * Study data as PostgreSQL stores it: a NUL character (which jsonb refuses) and a lone surrogate
 * (which it cannot encode) become U+FFFD, and text past {@link MAX_FIELD_CHARS} is cut. A model's
 * answer may hold either; refused by the database, the paper would be retried, each time a paid
 * call, and fail with the database's error.
 */
export function storableStudyData(data: StudyData): StudyData {
  const text = (value: string) => storableText(value.length > MAX_FIELD_CHARS ? `${value.slice(0, MAX_FIELD_CHARS - 1)}…` : value);
  const out = { ...data };
  for (const key of STUDY_FIELDS) {
    const field = data[key];
    if (field === null) continue;
    const span = { ...field.span, text: text(field.span.text) };
    (out as Record<string, unknown>)[key] = typeof field.value === 'string' ? { value: text(field.value), span } : { value: field.value, span };
  }
  return out;
}

export const STUDY_FIELDS = ['studyDesign', 'sampleSize', 'population', 'intervention', 'comparator', 'primaryOutcome'] as const;

/** What a child returns and what is stored per paper. */
export interface Extraction {
  fields: StudyData;
  model: string;
  promptVersion: string;
}

/** Turns a paper's full text into study data. */
export interface Extractor {
  readonly model: string;
  readonly promptVersion: string;
  /** Whether it calls the model (its calls then run under the platform's shared LLM limits). */
  readonly usesLlm: boolean;
  extract(text: string, options: { signal: AbortSignal }): Promise<StudyData>;
}
