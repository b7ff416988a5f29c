import { defineFanout, PermanentError } from '@fanout/core';
import { withLlmLimits } from '@fanout/llm';
import { z } from 'zod';
import type { PrismaClient } from '../generated/prisma/client.ts';
import type { FileStorage } from './library/storage.ts';
import type { PdfReader } from './pdf/text.ts';
import { storableStudyData, studyDataSchema, type Extractor } from './extract/study.ts';

export interface AslOptions {
  prisma: PrismaClient;
  storage: FileStorage;
  extractor: Extractor;
  /** Reads PDFs off the event loop, within limits of size, time and memory. */
  pdf: PdfReader;
  /** The shared limits of the platform's model, when the extractor calls one. */
  llmLimits?: { concurrency: number; perMinute: number } | null;
}

export const aslInput = z.object({
  // A UUID is read in either case; the library keys documents by its lower-case form.
  documentIds: z
    .array(z.uuid({ error: 'must be a document id (a UUID)' }).overwrite((id) => id.toLowerCase()))
    .min(1)
    .max(10_000),
});

/** What the manager freezes for each paper, so a document deleted mid-run is still processed. */
export const aslItem = z.object({
  documentId: z.uuid(),
  title: z.string().nullable(),
  filename: z.string().nullable(),
  storageKey: z.string().nullable(),
});

/** Extractions deleted per statement when their tasks' details go. */
const PURGE_BATCH = 2000;

/**
 * ASL tool 3: extract study data from a batch of papers, one child per paper. One bad PDF fails
 * its own item only; the model never sees more calls than the platform's shared limits allow.
 */
export function aslExtract(options: AslOptions) {
  return defineFanout({
    name: 'asl_extract',
    input: aslInput,
    item: aslItem,
    result: z.object({ extractionId: z.uuid(), model: z.string(), fieldsFound: z.number().int() }),
    // A batch of up to 100 papers is listed at submit (one query of the tenant's documents) and
    // starts at once, without waiting for a manager job.
    options: { child: { retryDelaySeconds: 5 }, manager: { dispatchAtSubmit: 100 } },
    summarize: ({ documentIds }) => {
      const papers = new Set(documentIds).size;
      return `${papers} ${papers === 1 ? 'paper' : 'papers'}`;
    },
    async *listItems({ documentIds }, ctx) {
      const unique = [...new Set(documentIds)];
      for (let i = 0; i < unique.length; i += 500) {
        const chunk = unique.slice(i, i + 500);
        // Only the submitting tenant's documents; anything else is "not found", never another's file.
        const docs = await options.prisma.kbDocument.findMany({ where: { id: { in: chunk }, owner: ctx.task.tenant ?? '' } });
        const byId = new Map(docs.map((d) => [d.id, d]));
        yield chunk.map((id) => {
          const doc = byId.get(id);
          return {
            key: id,
            snapshot: { documentId: id, title: doc?.title ?? null, filename: doc?.filename ?? null, storageKey: doc?.storageKey ?? null },
          };
        });
      }
    },
    async runItem(doc, ctx) {
      if (!doc.storageKey) throw new PermanentError(`document ${doc.documentId} is not in your library`, { code: 'document_not_found' });
      // A file over the limit is refused before it is read; the reading thread reads the others.
      const size = await options.storage.size(doc.storageKey);
      if (size === null) throw new PermanentError(`the file ${doc.filename} is missing from storage`, { code: 'missing_file' });
      const text = await options.pdf.fileText(options.storage.pathOf(doc.storageKey), size, { signal: ctx.signal });
      ctx.log(`read ${doc.filename}: ${text.length} characters`);
      const extract = () => options.extractor.extract(text, { signal: ctx.signal });
      const extracted = options.extractor.usesLlm && options.llmLimits ? await withLlmLimits(ctx, options.llmLimits, extract) : await extract();
      // Whatever the extractor, only data of the study schema is stored, as text PostgreSQL takes.
      const fields = storableStudyData(studyDataSchema.parse(extracted));
      // Keyed by item: a re-run (after a crash) replaces its own row.
      const row = await options.prisma.aslExtraction.upsert({
        where: { itemId: ctx.item.id },
        create: { taskId: ctx.task.id, itemId: ctx.item.id, documentId: doc.documentId, filename: doc.filename ?? '', fields, model: options.extractor.model, promptVersion: options.extractor.promptVersion },
        update: { fields, model: options.extractor.model, promptVersion: options.extractor.promptVersion },
      });
      return { extractionId: row.id, model: options.extractor.model, fieldsFound: Object.values(fields).filter((f) => f !== null).length };
    },
    // Retention (or a delete) took the tasks' items, which its results are read through: their
    // extractions go too, a bounded batch at a time, so the table does not grow without end.
    async onPurge(taskIds, ctx) {
      // Until a statement finds none left (one that deletes fewer than a batch is not the proof).
      for (;;) {
        ctx.signal.throwIfAborted();
        const deleted = await options.prisma.$executeRaw`
          DELETE FROM asl_extraction WHERE id IN (SELECT id FROM asl_extraction WHERE task_id = ANY(${[...taskIds]}::uuid[]) LIMIT ${PURGE_BATCH}::int)`;
        if (deleted === 0) break;
      }
    },
  });
}

export type AslDefinition = ReturnType<typeof aslExtract>;
