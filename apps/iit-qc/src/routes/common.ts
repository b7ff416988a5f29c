import { HttpError } from '@fanout/http';
import type { Context } from 'hono';
import type pg from 'pg';
import { z } from 'zod';
import type { Study } from '../data/import.ts';
import { UnreadableFileError } from '../data/table.ts';
import { RuleSetError } from '../rules/rule-set.ts';

export const idParams = z.object({ id: z.uuid({ error: 'must be an id (a UUID)' }) });
const LIMIT = 'must be an integer from 1 to 1000';
export const limit = z.coerce.number({ error: LIMIT }).int({ error: LIMIT }).min(1, { error: LIMIT }).max(1000, { error: LIMIT }).default(100);
export const cursor = z.string().regex(/^\d{1,9}$/, { error: 'not a cursor this API returned (pass nextCursor from the previous page)' }).optional();

/** What a finding and a discrepancy both say: which rule, where in the study, and what it found. */
export const locatedSchema = z.object({
  key: z.string(),
  ruleId: z.string(),
  subject: z.string().nullable(),
  site: z.string().nullable(),
  domain: z.string().nullable(),
  dataset: z.string().nullable(),
  recno: z.number().int().nullable(),
  variables: z.array(z.string()),
  values: z.array(z.string()),
  message: z.string(),
  severity: z.string(),
});

/** `locatedSchema`'s fields from a `qc_finding` or `qc_discrepancy` row. */
export const locatedView = (r: Record<string, any>) => ({
  key: r.key as string,
  ruleId: r.rule_id as string,
  subject: r.subject as string | null,
  site: r.site as string | null,
  domain: r.domain as string | null,
  dataset: r.dataset as string | null,
  recno: r.recno as number | null,
  variables: (r.variables ?? []) as string[],
  values: (r.values ?? []) as string[],
  message: r.message as string,
  severity: r.severity as string,
});

export const tenantOf = (c: Context): string => (c.get('principal') as { tenant: string }).tenant;

/** The caller's study, or a 404 (another tenant's study is unknown, as in every route). */
export async function ownedStudy(pool: pg.Pool, c: Context, id: string): Promise<Study> {
  const { rows } = await pool.query<Study>('SELECT id, tenant, name, standard FROM qc_study WHERE id = $1 AND tenant = $2', [id, tenantOf(c)]);
  if (!rows[0]) throw new HttpError(404, 'not_found', `study ${id} not found`);
  return rows[0];
}

/** A run of the caller's tenant, or a 404. */
export async function ownedRun(pool: pg.Pool, c: Context, id: string): Promise<{ task_id: string; study_id: string; rule_set_id: string; stage: string; summary: unknown; datasets: unknown; subjects: number; previous_run_id: string | null; created_at: Date; finished_at: Date | null }> {
  const { rows } = await pool.query('SELECT * FROM qc_run WHERE task_id = $1 AND tenant = $2', [id, tenantOf(c)]);
  if (!rows[0]) throw new HttpError(404, 'not_found', `run ${id} not found: no run of yours has this id, or its manager has not prepared it yet (one whose manager failed never will: its task, GET /tasks/${id}, says why)`);
  return rows[0];
}

/** Turns a refused file or rule set into a 400 naming the field and the rule. */
export function asHttpError(error: unknown): unknown {
  if (error instanceof UnreadableFileError) {
    const tooBig = error.rule === 'too_big';
    return new HttpError(tooBig ? 413 : 400, tooBig ? 'payload_too_large' : 'invalid_file', `${error.field}: ${error.message}`, [{ field: error.field, rule: error.rule, message: error.message }]);
  }
  if (error instanceof RuleSetError) return new HttpError(400, 'invalid_rule_set', error.issues.length === 1 ? error.message : `${error.message} (and ${error.issues.length - 1} more)`, error.issues);
  return error;
}

/** Keyset paging over an ordered integer position: the cursor is the last position returned. */
export const pageOf = <T>(rows: T[], take: number, position: (row: T) => number) => ({
  rows: rows.slice(0, take),
  nextCursor: rows.length > take ? String(position(rows[take - 1]!)) : null,
});
