import { isTerminalTaskStatus, type ItemRecord } from '@fanout/core';
import type { AslRuntime } from './runtime.ts';
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
export async function taskResults(rt: AslRuntime, taskId: string): Promise<ResultRow[] | 'not_finished'> {
  const task = await rt.fanout.getTask(taskId);
  if (!task || !isTerminalTaskStatus(task.status)) return 'not_finished';
  const extractions = new Map((await rt.prisma.aslExtraction.findMany({ where: { taskId } })).map((e) => [e.itemId, e]));
  const rows: ResultRow[] = [];
  let cursor: string | null = null;
  do {
    const page = await rt.fanout.listItems(taskId, { limit: 1000, cursor });
    for (const item of page.rows) {
      const snapshot = item.snapshot as { documentId: string; filename: string | null; title: string | null };
      const extraction = extractions.get(item.id);
      rows.push({
        documentId: snapshot.documentId,
        filename: snapshot.filename,
        title: snapshot.title,
        status: item.status,
        error: item.status === 'succeeded' ? null : item.error && { code: item.error.code, message: item.error.message },
        model: extraction?.model ?? null,
        promptVersion: extraction?.promptVersion ?? null,
        fields: item.status === 'succeeded' ? ((extraction?.fields as StudyData | undefined) ?? null) : null,
      });
    }
    cursor = page.nextCursor;
  } while (cursor);
  return rows;
}

const csvCell = (value: unknown): string => {
  const text = value === null || value === undefined ? '' : String(value);
  // Quote everything that needs it; a leading formula character is defused for spreadsheets.
  const safe = /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
  return /[",\n\r]/.test(safe) || safe !== text ? `"${safe.replaceAll('"', '""')}"` : safe;
};

export function toCsv(rows: ResultRow[]): string {
  const header = ['document_id', 'filename', 'status', ...STUDY_FIELDS.map((f) => f.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)), 'error_code', 'error', 'model', 'prompt_version'];
  const lines = rows.map((r) =>
    [r.documentId, r.filename, r.status, ...STUDY_FIELDS.map((f) => r.fields?.[f]?.value ?? null), r.error?.code ?? null, r.error?.message ?? null, r.model, r.promptVersion]
      .map(csvCell)
      .join(','),
  );
  return `${[header.join(','), ...lines].join('\r\n')}\r\n`;
}
