import { HttpError, route, type RouteSpec } from '@fanout/http';
import type pg from 'pg';
import { z } from 'zod';
import { cursor, limit, locatedSchema, locatedView, ownedStudy, pageOf, tenantOf } from './common.ts';

const keyParams = z.object({ id: z.uuid({ error: 'must be a study id (a UUID)' }), key: z.string().regex(/^[0-9a-f]{32}$/, { error: 'must be a discrepancy key (32 hex digits)' }) });
const textBody = z.object({ text: z.string().trim().min(1, { error: 'a reason is required' }).max(4000) }).strict();

const discrepancySchema = locatedSchema.extend({
  status: z.enum(['open', 'resolved']),
  excluded: z.boolean(),
  exclusionReason: z.string().nullable(),
  firstRunId: z.uuid(),
  lastRunId: z.uuid(),
  resolvedRunId: z.uuid().nullable(),
  queryStatus: z.string().nullable(),
});

const view = (d: Record<string, any>) => ({
  ...locatedView(d),
  status: d.status,
  excluded: d.excluded_reason !== null,
  exclusionReason: d.excluded_reason,
  firstRunId: d.first_run_id,
  lastRunId: d.last_run_id,
  resolvedRunId: d.resolved_run_id,
  queryStatus: d.query_status ?? null,
});

/** Discrepancies of a study across runs, filtered and paged; exclusions with a reason that later runs keep. */
export function discrepancyRoutes({ pool }: { pool: pg.Pool }): RouteSpec[] {
  return [
    route({
      method: 'get',
      path: '/studies/:id/discrepancies',
      summary: "A study's discrepancies across runs, filtered by rule, subject, site and status (open, resolved, excluded), paged with cursor",
      params: z.object({ id: z.uuid() }),
      query: z.object({ rule: z.string().max(64).optional(), subject: z.string().max(200).optional(), site: z.string().max(200).optional(), status: z.enum(['open', 'resolved', 'excluded']).optional(), limit, cursor }).strict(),
      responses: { 200: z.object({ discrepancies: z.array(discrepancySchema), nextCursor: z.string().nullable() }) },
      async handler(c, { params, query }) {
        const study = await ownedStudy(pool, c, params.id);
        const { rows } = await pool.query(
          `SELECT d.*, (SELECT q.status FROM qc_query q WHERE q.study_id = d.study_id AND q.discrepancy_key = d.key ORDER BY q.opened_at DESC LIMIT 1) AS query_status,
                  row_number() OVER (ORDER BY d.rule_id, d.subject NULLS FIRST, d.dataset, d.recno, d.key) AS pos
           FROM qc_discrepancy d WHERE d.study_id = $1 AND ($2::text IS NULL OR d.rule_id = $2) AND ($3::text IS NULL OR d.subject = $3) AND ($4::text IS NULL OR d.site = $4)
             AND ($5::text IS NULL OR ($5 = 'excluded' AND d.excluded_reason IS NOT NULL) OR (d.status = $5 AND d.excluded_reason IS NULL))
           ORDER BY pos OFFSET $6 LIMIT $7`,
          [study.id, query.rule ?? null, query.subject ?? null, query.site ?? null, query.status ?? null, Number(query.cursor ?? 0), query.limit + 1],
        );
        const page = pageOf(rows, query.limit, (r) => Number(r.pos));
        return c.json({ discrepancies: page.rows.map(view), nextCursor: page.nextCursor });
      },
    }),
    route({
      method: 'post',
      path: '/studies/:id/discrepancies/:key/exclusion',
      summary: 'Exclude a discrepancy with a reason ({ text }): it stays excluded in later runs (counted apart, not as an issue)',
      params: keyParams,
      body: textBody,
      responses: { 200: discrepancySchema },
      async handler(c, { params, body }) {
        const study = await ownedStudy(pool, c, params.id);
        const { rows } = await pool.query('UPDATE qc_discrepancy SET excluded_reason = $3, excluded_by = $4, excluded_at = now(), updated_at = now() WHERE study_id = $1 AND key = $2 RETURNING *', [study.id, params.key, body.text, tenantOf(c)]);
        if (!rows[0]) throw new HttpError(404, 'not_found', `discrepancy ${params.key} not found`);
        return c.json(view(rows[0]));
      },
    }),
    route({
      method: 'delete',
      path: '/studies/:id/discrepancies/:key/exclusion',
      summary: 'Lift an exclusion: the next run counts the discrepancy again',
      params: keyParams,
      responses: { 200: discrepancySchema },
      async handler(c, { params }) {
        const study = await ownedStudy(pool, c, params.id);
        const { rows } = await pool.query('UPDATE qc_discrepancy SET excluded_reason = NULL, excluded_by = NULL, excluded_at = NULL, updated_at = now() WHERE study_id = $1 AND key = $2 RETURNING *', [study.id, params.key]);
        if (!rows[0]) throw new HttpError(404, 'not_found', `discrepancy ${params.key} not found`);
        return c.json(view(rows[0]));
      },
    }),
  ];
}
