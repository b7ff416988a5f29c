import { route, type RouteSpec } from '@fanout/http';
import type pg from 'pg';
import { z } from 'zod';
import { checkedByRun } from '../run/finish.ts';
import { cursor, idParams, limit, ownedRun, pageOf } from './common.ts';

/** The console's views of a run: issues by site, subject by rule, changes against the last run, a subject's records. */
export function runViewRoutes({ pool }: { pool: pg.Pool }): RouteSpec[] {
  return [
    route({
      method: 'get',
      path: '/runs/:id/sites',
      summary: 'Issues of a run by site: issues, subjects with issues, new since the last run, excluded',
      params: idParams,
      responses: { 200: z.object({ sites: z.array(z.object({ site: z.string(), issues: z.number().int(), subjects: z.number().int(), new: z.number().int(), excluded: z.number().int() })) }) },
      async handler(c, { params }) {
        const run = await ownedRun(pool, c, params.id);
        const { rows } = await pool.query(
          `SELECT coalesce(site, '(none)') AS site, count(*) FILTER (WHERE NOT excluded)::int AS issues, count(DISTINCT subject) FILTER (WHERE NOT excluded)::int AS subjects,
                  count(*) FILTER (WHERE change = 'new' AND NOT excluded)::int AS new, count(*) FILTER (WHERE excluded)::int AS excluded
           FROM qc_finding WHERE run_id = $1 GROUP BY 1 ORDER BY 2 DESC, 1`,
          [run.task_id],
        );
        return c.json({ sites: rows });
      },
    }),
    route({
      method: 'get',
      path: '/runs/:id/subject-rules',
      summary: 'Subject by rule: how many issues each rule found for each subject (filter by subject, rule or site), paged',
      params: idParams,
      query: z.object({ subject: z.string().max(200).optional(), rule: z.string().max(64).optional(), site: z.string().max(200).optional(), limit, cursor }).strict(),
      responses: { 200: z.object({ cells: z.array(z.object({ subject: z.string().nullable(), site: z.string().nullable(), ruleId: z.string(), issues: z.number().int(), severity: z.string() })), nextCursor: z.string().nullable() }) },
      async handler(c, { params, query }) {
        const run = await ownedRun(pool, c, params.id);
        const { rows } = await pool.query(
          `SELECT subject, site, rule_id AS "ruleId", count(*)::int AS issues, min(severity) AS severity, row_number() OVER (ORDER BY subject NULLS FIRST, rule_id) AS pos
           FROM qc_finding WHERE run_id = $1 AND NOT excluded AND ($2::text IS NULL OR subject = $2) AND ($3::text IS NULL OR rule_id = $3) AND ($4::text IS NULL OR site = $4)
           GROUP BY subject, site, rule_id ORDER BY pos OFFSET $5 LIMIT $6`,
          [run.task_id, query.subject ?? null, query.rule ?? null, query.site ?? null, Number(query.cursor ?? 0), query.limit + 1],
        );
        const page = pageOf(rows, query.limit, (r) => Number(r.pos));
        return c.json({ cells: page.rows.map(({ pos: _pos, ...r }) => r), nextCursor: page.nextCursor });
      },
    }),
    route({
      method: 'get',
      path: '/runs/:id/changes',
      summary: 'New, still open and resolved issues per rule against the previous complete run of the study (resolved: what this run checked and no longer finds)',
      params: idParams,
      responses: { 200: z.object({ changes: z.array(z.object({ ruleId: z.string(), new: z.number().int(), open: z.number().int(), resolved: z.number().int() })), previousRunId: z.uuid().nullable() }) },
      async handler(c, { params }) {
        const run = await ownedRun(pool, c, params.id);
        const { rows } = await pool.query(
          `WITH cur AS (SELECT rule_id, count(*) FILTER (WHERE change = 'new')::int AS new, count(*) FILTER (WHERE change = 'open')::int AS open FROM qc_finding WHERE run_id = $1 AND NOT excluded GROUP BY rule_id),
                gone AS (SELECT p.rule_id, count(*)::int AS resolved FROM qc_finding p WHERE p.run_id = $2 AND NOT p.excluded AND ${checkedByRun('p', '$1')} AND NOT EXISTS (SELECT 1 FROM qc_finding f WHERE f.run_id = $1 AND f.key = p.key) GROUP BY p.rule_id)
           SELECT coalesce(cur.rule_id, gone.rule_id) AS "ruleId", coalesce(cur.new, 0) AS new, coalesce(cur.open, 0) AS open, coalesce(gone.resolved, 0) AS resolved
           FROM cur FULL JOIN gone ON gone.rule_id = cur.rule_id ORDER BY 2 DESC, 4 DESC, 1`,
          [run.task_id, run.previous_run_id],
        );
        return c.json({ changes: rows, previousRunId: run.previous_run_id });
      },
    }),
    route({
      method: 'get',
      path: '/runs/:id/records',
      summary: "A subject's records as the run checked them (the snapshot's dataset versions), optionally of one dataset: the drill-down from a finding",
      params: idParams,
      query: z.object({ subject: z.string({ error: (issue) => (issue.input === undefined ? 'required: the subject whose records to show (USUBJID, or the record id of a REDCap project)' : undefined) }).min(1).max(200), dataset: z.string().min(1).max(100).optional(), limit, cursor }).strict(),
      responses: { 200: z.object({ records: z.array(z.object({ dataset: z.string(), recno: z.number().int(), values: z.string() })), nextCursor: z.string().nullable() }) },
      async handler(c, { params, query }) {
        const run = await ownedRun(pool, c, params.id);
        const datasets = (run.datasets as { id: string; name: string }[]).filter((d) => !query.dataset || d.name.toLowerCase() === query.dataset.toLowerCase());
        const { rows } = await pool.query(
          `SELECT d.name AS dataset, r.recno, r.data::text AS values, row_number() OVER (ORDER BY d.name, r.recno) AS pos
           FROM qc_record r JOIN qc_dataset d ON d.id = r.dataset_id WHERE r.subject = $1 AND r.dataset_id = ANY($2::uuid[]) ORDER BY pos OFFSET $3 LIMIT $4`,
          [query.subject, datasets.map((d) => d.id), Number(query.cursor ?? 0), query.limit + 1],
        );
        const page = pageOf(rows, query.limit, (r) => Number(r.pos));
        return c.json({ records: page.rows.map(({ pos: _pos, ...r }) => r), nextCursor: page.nextCursor });
      },
    }),
  ];
}
