import { FanoutError, type Fanout } from '@fanout/core';
import { errorSchema, invalidRequest, route, type RouteSpec } from '@fanout/http';
import type pg from 'pg';
import { z } from 'zod';
import type { QcDefinition } from '../definition.ts';
import { cursor, idParams, limit, locatedSchema, locatedView, ownedRun, pageOf, tenantOf } from './common.ts';

const runSchema = z.object({
  id: z.uuid(),
  studyId: z.uuid(),
  ruleSetId: z.uuid(),
  stage: z.string(),
  subjects: z.number().int(),
  previousRunId: z.uuid().nullable(),
  datasets: z.unknown(),
  summary: z.unknown(),
  createdAt: z.iso.datetime(),
  finishedAt: z.iso.datetime().nullable(),
});

const runView = (r: Awaited<ReturnType<typeof ownedRun>>) => ({
  id: r.task_id,
  studyId: r.study_id,
  ruleSetId: r.rule_set_id,
  stage: r.stage,
  subjects: r.subjects,
  previousRunId: r.previous_run_id,
  datasets: r.datasets,
  summary: r.summary,
  createdAt: r.created_at.toISOString(),
  finishedAt: r.finished_at?.toISOString() ?? null,
});

const findingSchema = locatedSchema.extend({
  level: z.string(),
  change: z.string().nullable(),
  excluded: z.boolean(),
  studyId: z.uuid(),
});

export const findingView = (f: Record<string, any>) => ({
  ...locatedView(f),
  level: f.level,
  change: f.change,
  excluded: f.excluded,
  studyId: f.study_id,
});

const findingsQuery = z
  .object({
    rule: z.string().max(64).optional(),
    subject: z.string().max(200).optional(),
    site: z.string().max(200).optional(),
    /** new (first found by this run), open (found before too), excluded */
    status: z.enum(['new', 'open', 'excluded']).optional(),
    limit,
    cursor,
  })
  .strict();

/** Runs: start one, list them, a run's rules and its findings (filtered, paged). */
export function runRoutes({ pool, fanout, definition }: { pool: pg.Pool; fanout: Fanout; definition: QcDefinition }): RouteSpec[] {
  return [
    route({
      method: 'post',
      path: '/runs',
      summary: 'Start a QC run of a study with a rule set version (a task with one child per subject); the same as POST /tasks with this input',
      body: z.object({ studyId: z.uuid({ error: 'must be a study id (a UUID)' }), ruleSetId: z.uuid({ error: 'must be a rule set id (a UUID)' }) }).strict(),
      responses: { 202: z.object({ id: z.uuid(), status: z.string() }), 400: errorSchema },
      async handler(c, { body }) {
        try {
          const task = await fanout.submit(definition, body, { tenant: tenantOf(c) });
          return c.json({ id: task.id, status: task.status }, 202);
        } catch (error) {
          // The definition's checkInput: the input's fields are this body's.
          if (!(error instanceof FanoutError) || !error.issues) throw error;
          throw invalidRequest(error.issues.map((i) => ({ ...i, field: i.field.replace(/^input\./, 'body.') })));
        }
      },
    }),
    route({
      method: 'get',
      path: '/runs',
      summary: "The tenant's QC runs (of one study with studyId), newest first",
      query: z.object({ studyId: z.uuid().optional(), limit }).strict(),
      responses: { 200: z.object({ runs: z.array(runSchema) }) },
      async handler(c, { query }) {
        const { rows } = await pool.query('SELECT * FROM qc_run WHERE tenant = $1 AND ($2::uuid IS NULL OR study_id = $2) ORDER BY created_at DESC LIMIT $3', [tenantOf(c), query.studyId ?? null, query.limit]);
        return c.json({ runs: rows.map(runView) });
      },
    }),
    route({
      method: 'get',
      path: '/runs/:id',
      summary: 'A QC run: its snapshot (datasets and hashes, rule set), stage, and summary (issues, new, open, resolved, rules passed/issues/skipped/error)',
      params: idParams,
      responses: { 200: runSchema },
      async handler(c, { params }) {
        return c.json(runView(await ownedRun(pool, c, params.id)));
      },
    }),
    route({
      method: 'get',
      path: '/runs/:id/rules',
      summary: "Each rule's result in a run: passed, issues (with count), skipped (with the reason) or error",
      params: idParams,
      query: z.object({ status: z.enum(['passed', 'issues', 'skipped', 'error']).optional() }).strict(),
      responses: {
        200: z.object({
          rules: z.array(z.object({ ruleId: z.string(), status: z.string(), issues: z.number().int(), excluded: z.number().int(), subjects: z.number().int(), errors: z.number().int(), reason: z.string().nullable(), severity: z.string(), message: z.string(), references: z.unknown() })),
        }),
      },
      async handler(c, { params, query }) {
        const run = await ownedRun(pool, c, params.id);
        const { rows } = await pool.query(
          `SELECT rr.*, r->>'severity' AS severity, r->>'message' AS message, r->'references' AS refs
           FROM qc_rule_result rr JOIN qc_rule_set rs ON rs.id = $2, jsonb_array_elements(rs.rules->'rules') r
           WHERE rr.run_id = $1 AND r->>'id' = rr.rule_id AND ($3::text IS NULL OR rr.status = $3) ORDER BY rr.issues DESC, rr.rule_id`,
          [run.task_id, run.rule_set_id, query.status ?? null],
        );
        return c.json({
          rules: rows.map((r) => ({ ruleId: r.rule_id, status: r.status, issues: r.issues, excluded: r.excluded, subjects: r.subjects, errors: r.errors, reason: r.reason, severity: r.severity, message: r.message, references: r.refs ?? null })),
        });
      },
    }),
    route({
      method: 'get',
      path: '/runs/:id/findings',
      summary: "A run's findings, filtered by rule, subject, site and status (new, open, excluded), paged with cursor",
      params: idParams,
      query: findingsQuery,
      responses: { 200: z.object({ findings: z.array(findingSchema), nextCursor: z.string().nullable() }) },
      async handler(c, { params, query }) {
        const run = await ownedRun(pool, c, params.id);
        const { rows } = await pool.query(
          `SELECT f.*, r.study_id, row_number() OVER (ORDER BY f.rule_id, f.subject NULLS FIRST, f.dataset, f.recno, f.key) AS pos FROM qc_finding f JOIN qc_run r ON r.task_id = f.run_id
           WHERE f.run_id = $1 AND ($2::text IS NULL OR f.rule_id = $2) AND ($3::text IS NULL OR f.subject = $3) AND ($4::text IS NULL OR f.site = $4)
             AND ($5::text IS NULL OR ($5 = 'excluded' AND f.excluded) OR (f.change = $5 AND NOT f.excluded))
           ORDER BY pos OFFSET $6 LIMIT $7`,
          [run.task_id, query.rule ?? null, query.subject ?? null, query.site ?? null, query.status ?? null, Number(query.cursor ?? 0), query.limit + 1],
        );
        const page = pageOf(rows, query.limit, (r) => Number(r.pos));
        return c.json({ findings: page.rows.map(findingView), nextCursor: page.nextCursor });
      },
    }),
  ];
}
