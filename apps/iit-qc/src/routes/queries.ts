import { errorSchema, HttpError, route, type RouteSpec } from '@fanout/http';
import type pg from 'pg';
import { z } from 'zod';
import { cursor, idParams, limit, ownedStudy, pageOf, tenantOf } from './common.ts';

const STATUSES = ['OPEN', 'ANSWERED', 'CLOSED'] as const;
/** Which action moves a query from which status to which. */
const MOVES: Record<string, { from: readonly string[]; to: (typeof STATUSES)[number]; done: string }> = {
  answer: { from: ['OPEN'], to: 'ANSWERED', done: 'answered' },
  close: { from: ['OPEN', 'ANSWERED'], to: 'CLOSED', done: 'closed' },
  reopen: { from: ['ANSWERED', 'CLOSED'], to: 'OPEN', done: 'reopened' },
  comment: { from: ['OPEN', 'ANSWERED', 'CLOSED'], to: 'OPEN', done: 'commented on' },
};

const eventSchema = z.object({ action: z.string(), status: z.enum(STATUSES), by: z.string(), text: z.string(), at: z.iso.datetime() });
const querySchema = z.object({
  id: z.uuid(),
  studyId: z.uuid(),
  discrepancyKey: z.string(),
  ruleId: z.string().nullable(),
  subject: z.string().nullable(),
  site: z.string().nullable(),
  message: z.string().nullable(),
  status: z.enum(STATUSES),
  openedBy: z.string(),
  openedAt: z.iso.datetime(),
  updatedAt: z.iso.datetime(),
  ageDays: z.number(),
  history: z.array(eventSchema).optional(),
});

const view = (q: Record<string, any>, history?: Record<string, any>[]) => ({
  id: q.id,
  studyId: q.study_id,
  discrepancyKey: q.discrepancy_key,
  ruleId: q.rule_id ?? null,
  subject: q.subject ?? null,
  site: q.site ?? null,
  message: q.message ?? null,
  status: q.status,
  openedBy: q.opened_by,
  openedAt: q.opened_at.toISOString(),
  updatedAt: q.updated_at.toISOString(),
  ageDays: Math.floor((Date.now() - q.opened_at.getTime()) / 86_400_000),
  ...(history ? { history: history.map((e) => ({ action: e.action, status: e.status, by: e.by, text: e.text, at: e.at.toISOString() })) } : {}),
});

const SELECT = `SELECT q.*, d.rule_id, d.subject, d.site, d.message FROM qc_query q LEFT JOIN qc_discrepancy d ON d.study_id = q.study_id AND d.key = q.discrepancy_key`;

/** Queries on discrepancies: OPEN, ANSWERED, CLOSED, each step kept with who, when and the text. */
export function queryRoutes({ pool }: { pool: pg.Pool }): RouteSpec[] {
  const load = async (c: Parameters<RouteSpec['handler']>[0], id: string) => {
    const { rows } = await pool.query(`${SELECT} WHERE q.id = $1 AND q.tenant = $2`, [id, tenantOf(c)]);
    if (!rows[0]) throw new HttpError(404, 'not_found', `query ${id} not found`);
    const history = await pool.query('SELECT * FROM qc_query_event WHERE query_id = $1 ORDER BY at, id', [id]);
    return view(rows[0], history.rows);
  };
  const openQuery = async (c: Parameters<RouteSpec['handler']>[0], studyId: string, key: string, text: string) => {
    const study = await ownedStudy(pool, c, studyId);
    const d = await pool.query('SELECT key FROM qc_discrepancy WHERE study_id = $1 AND key = $2', [study.id, key]);
    if (!d.rows[0]) throw new HttpError(404, 'not_found', `discrepancy ${key} not found`, [{ field: 'key', rule: 'not_found', message: 'no such discrepancy in this study' }]);
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const { rows } = await client.query("INSERT INTO qc_query (id, study_id, tenant, discrepancy_key, status, opened_by) VALUES (gen_random_uuid(), $1, $2, $3, 'OPEN', $4) RETURNING id", [study.id, study.tenant, key, tenantOf(c)]);
      await client.query("INSERT INTO qc_query_event (id, query_id, action, status, by, text) VALUES (gen_random_uuid(), $1, 'open', 'OPEN', $2, $3)", [rows[0].id, tenantOf(c), text]);
      await client.query('COMMIT');
      return c.json(await load(c, rows[0].id), 201);
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  };
  return [
    route({
      method: 'post',
      path: '/studies/:id/queries',
      summary: 'Open a query on a discrepancy ({ key, text })',
      params: idParams,
      body: z.object({ key: z.string().regex(/^[0-9a-f]{32}$/, { error: 'must be a discrepancy key' }), text: z.string().trim().min(1).max(4000) }).strict(),
      responses: { 201: querySchema },
      async handler(c, { params, body }) {
        return openQuery(c, params.id, body.key, body.text);
      },
    }),
    route({
      method: 'post',
      path: '/studies/:id/discrepancies/:key/queries',
      summary: 'Open a query on a discrepancy ({ text }): the same as POST /studies/:id/queries with the key in the path',
      params: z.object({ id: z.uuid(), key: z.string().regex(/^[0-9a-f]{32}$/, { error: 'must be a discrepancy key' }) }),
      body: z.object({ text: z.string().trim().min(1).max(4000) }).strict(),
      responses: { 201: querySchema },
      async handler(c, { params, body }) {
        return openQuery(c, params.id, params.key, body.text);
      },
    }),
    route({
      method: 'get',
      path: '/queries',
      summary: "The tenant's queries (of one study with studyId), by status, oldest first (query ageing)",
      query: z.object({ studyId: z.uuid().optional(), status: z.enum(STATUSES).optional(), limit, cursor }).strict(),
      responses: { 200: z.object({ queries: z.array(querySchema), nextCursor: z.string().nullable() }) },
      async handler(c, { query }) {
        const { rows } = await pool.query(
          `SELECT * FROM (${SELECT} WHERE q.tenant = $1 AND ($2::uuid IS NULL OR q.study_id = $2) AND ($3::text IS NULL OR q.status = $3)) x
           ORDER BY opened_at, id OFFSET $4 LIMIT $5`,
          [tenantOf(c), query.studyId ?? null, query.status ?? null, Number(query.cursor ?? 0), query.limit + 1],
        );
        const offset = Number(query.cursor ?? 0);
        const page = pageOf(rows, query.limit, (r) => offset + rows.indexOf(r) + 1);
        return c.json({ queries: page.rows.map((r) => view(r)), nextCursor: page.nextCursor });
      },
    }),
    route({
      method: 'get',
      path: '/queries/:id',
      summary: 'A query with its history',
      params: idParams,
      responses: { 200: querySchema },
      async handler(c, { params }) {
        return c.json(await load(c, params.id));
      },
    }),
    route({
      method: 'post',
      path: '/queries/:id/:action',
      summary: 'Move a query: answer (OPEN to ANSWERED), close, reopen, or comment; { text } is kept in its history',
      params: z.object({ id: z.uuid(), action: z.enum(['answer', 'close', 'reopen', 'comment']) }),
      body: z.object({ text: z.string().trim().min(1).max(4000) }).strict(),
      responses: { 200: querySchema, 409: errorSchema },
      async handler(c, { params, body }) {
        const move = MOVES[params.action]!;
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          const { rows } = await client.query('SELECT status FROM qc_query WHERE id = $1 AND tenant = $2 FOR UPDATE', [params.id, tenantOf(c)]);
          if (!rows[0]) throw new HttpError(404, 'not_found', `query ${params.id} not found`);
          if (!move.from.includes(rows[0].status)) throw new HttpError(409, 'conflict', `a query that is ${rows[0].status} cannot be ${move.done} (only one that is ${move.from.join(' or ')})`);
          const to = params.action === 'comment' ? rows[0].status : move.to;
          await client.query('UPDATE qc_query SET status = $2, updated_at = now() WHERE id = $1', [params.id, to]);
          await client.query('INSERT INTO qc_query_event (id, query_id, action, status, by, text) VALUES (gen_random_uuid(), $1, $2, $3, $4, $5)', [params.id, params.action, to, tenantOf(c), body.text]);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK').catch(() => {});
          throw error;
        } finally {
          client.release();
        }
        return c.json(await load(c, params.id));
      },
    }),
  ];
}
