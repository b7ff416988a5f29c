import { createHash } from 'node:crypto';
import { errorSchema, HttpError, route, type RouteSpec } from '@fanout/http';
import type pg from 'pg';
import { z } from 'zod';
import { currentMetadata } from '../data/import.ts';
import type { DefineMetadata } from '../data/define-xml.ts';
import type { RedcapDictionary } from '../data/redcap.ts';
import { parseRuleSet } from '../rules/rule-set.ts';
import { asHttpError, idParams, ownedStudy, tenantOf } from './common.ts';

const ruleSetSchema = z.object({
  id: z.uuid(),
  studyId: z.uuid(),
  name: z.string(),
  version: z.number().int(),
  sha256: z.string(),
  rules: z.number().int(),
  createdBy: z.string(),
  createdAt: z.iso.datetime(),
  notes: z.array(z.string()),
});

const view = (r: { id: string; study_id: string; name: string; version: number; sha256: string; rule_count: number; created_by: string; created_at: Date; rules: { notes?: string[] } }) => ({
  id: r.id,
  studyId: r.study_id,
  name: r.name,
  version: r.version,
  sha256: r.sha256,
  rules: r.rule_count,
  createdBy: r.created_by,
  createdAt: r.created_at.toISOString(),
  notes: r.rules.notes ?? [],
});

/** Uploads a rule set (YAML) for a study: checked, generators expanded, every rule compiled; stored as the next version of its name. */
export async function storeRuleSet(pool: pg.Pool, study: { id: string; tenant: string; standard: 'sdtm' | 'redcap' }, source: string, by: string) {
  const define = study.standard === 'sdtm' ? await currentMetadata<DefineMetadata>(pool, study.id, 'define') : null;
  const dictionary = study.standard === 'redcap' ? await currentMetadata<RedcapDictionary>(pool, study.id, 'dictionary') : null;
  const expanded = parseRuleSet(source, { standard: study.standard, define, dictionary });
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT id FROM qc_study WHERE id = $1 FOR UPDATE', [study.id]);
    const { rows } = await client.query(
      `INSERT INTO qc_rule_set (id, study_id, tenant, name, version, source, sha256, rules, rule_count, created_by)
       SELECT gen_random_uuid(), $1, $2, $3, coalesce(max(version), 0) + 1, $4, $5, $6, $7, $8 FROM qc_rule_set WHERE study_id = $1 AND name = $3 RETURNING *`,
      [study.id, study.tenant, expanded.name, source, createHash('sha256').update(source).digest('hex'), JSON.stringify(expanded), expanded.rules.length, by],
    );
    await client.query('COMMIT');
    return view(rows[0]);
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

export function ruleSetRoutes({ pool }: { pool: pg.Pool }): RouteSpec[] {
  return [
    route({
      method: 'post',
      path: '/studies/:id/rule-sets',
      summary: 'Upload a rule set (YAML in `source`): each rule is checked and its CEL compiled; a bad rule is refused (400) with its id and the position of the error. A name uploaded again becomes its next version',
      params: idParams,
      body: z.object({ source: z.string().min(1).max(5_000_000) }).strict(),
      responses: { 201: ruleSetSchema, 400: errorSchema },
      async handler(c, { params, body }) {
        const study = await ownedStudy(pool, c, params.id);
        try {
          return c.json(await storeRuleSet(pool, study, body.source, tenantOf(c)), 201);
        } catch (error) {
          throw asHttpError(error);
        }
      },
    }),
    route({
      method: 'get',
      path: '/studies/:id/rule-sets',
      summary: "A study's rule sets, every version, newest first (label: name and version, for the console's run panel)",
      params: idParams,
      responses: { 200: z.object({ ruleSets: z.array(ruleSetSchema.extend({ label: z.string() })) }) },
      async handler(c, { params }) {
        const study = await ownedStudy(pool, c, params.id);
        const { rows } = await pool.query('SELECT * FROM qc_rule_set WHERE study_id = $1 ORDER BY name, version DESC', [study.id]);
        return c.json({ ruleSets: rows.map((r) => ({ ...view(r), label: `${r.name} v${r.version}` })) });
      },
    }),
    route({
      method: 'get',
      path: '/rule-sets',
      summary: "The tenant's rule sets across studies, newest first (for the console's run panel)",
      responses: { 200: z.object({ ruleSets: z.array(ruleSetSchema.extend({ label: z.string() })) }) },
      async handler(c) {
        const { rows } = await pool.query('SELECT rs.*, s.name AS study_name FROM qc_rule_set rs JOIN qc_study s ON s.id = rs.study_id WHERE rs.tenant = $1 ORDER BY rs.created_at DESC LIMIT 1000', [tenantOf(c)]);
        return c.json({ ruleSets: rows.map((r) => ({ ...view(r), label: `${r.study_name}: ${r.name} v${r.version}` })) });
      },
    }),
    route({
      method: 'get',
      path: '/rule-sets/:id',
      summary: 'A rule set version: its YAML as uploaded and its rules with generators expanded',
      params: idParams,
      responses: { 200: ruleSetSchema.extend({ source: z.string(), expanded: z.array(z.unknown()) }) },
      async handler(c, { params }) {
        const { rows } = await pool.query('SELECT * FROM qc_rule_set WHERE id = $1 AND tenant = $2', [params.id, tenantOf(c)]);
        if (!rows[0]) throw new HttpError(404, 'not_found', `rule set ${params.id} not found`);
        return c.json({ ...view(rows[0]), source: rows[0].source, expanded: rows[0].rules.rules });
      },
    }),
  ];
}
