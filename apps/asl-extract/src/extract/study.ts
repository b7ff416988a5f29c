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
