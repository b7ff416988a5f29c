import { taskItems, type CsvColumn } from '@fanout/http';
import type { Fanout, ItemRecord, TaskRecord } from '@fanout/core';
import type { PrismaClient } from '../generated/prisma/client.ts';
import { STUDY_FIELDS, type StudyData } from './extract/study.ts';

export interface ResultRow {
  documentId: string;
  filename: string | null;
  title: string | null;
  status: ItemRecord['status'];
  error: { code: string; message: string } | null;
  model: string | null;
  promptVersion: string | null;
  fields: StudyData | null;
}

/** Every item of a finished task with its extraction (or its failure), in dispatch order. */
export async function* resultRows(prisma: PrismaClient, fanout: Fanout, task: TaskRecord): AsyncGenerator<ResultRow> {
  const extractions = new Map((await prisma.aslExtraction.findMany({ where: { taskId: task.id } })).map((e) => [e.itemId, e]));
  for await (const item of taskItems(fanout, task.id)) {
    const snapshot = item.snapshot as { documentId: string; filename: string | null; title: string | null };
    const extraction = extractions.get(item.id);
    yield {
      documentId: snapshot.documentId,
      filename: snapshot.filename,
      title: snapshot.title,
      status: item.status,
      error: item.status === 'succeeded' ? null : item.error && { code: item.error.code, message: item.error.message },
      model: extraction?.model ?? null,
      promptVersion: extraction?.promptVersion ?? null,
      fields: item.status === 'succeeded' ? ((extraction?.fields as StudyData | undefined) ?? null) : null,
    };
  }
}

const snake = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** The CSV: one line per paper, each study field's value in its own column. */
export const RESULT_COLUMNS: CsvColumn<ResultRow>[] = [
  { header: 'document_id', value: (r) => r.documentId },
  { header: 'filename', value: (r) => r.filename },
  { header: 'status', value: (r) => r.status },
  ...STUDY_FIELDS.map((f): CsvColumn<ResultRow> => ({ header: snake(f), value: (r) => r.fields?.[f]?.value ?? null })),
  { header: 'error_code', value: (r) => r.error?.code ?? null },
  { header: 'error', value: (r) => r.error?.message ?? null },
  { header: 'model', value: (r) => r.model },
  { header: 'prompt_version', value: (r) => r.promptVersion },
];
