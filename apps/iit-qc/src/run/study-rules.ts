import type pg from 'pg';
import { findingKey, recordIdentity, type Finding } from '../rules/engine.ts';
import type { CompiledRuleSpec } from '../rules/rule-set.ts';
import { text } from '../rules/functions.ts';
import type { Row } from '../data/table.ts';
import type { RunDataset } from './run-store.ts';

interface Hit {
  dataset: string;
  domain: string;
  recno: number;
  subject: string | null;
  data: Row;
  field?: string;
}

const NUMERIC = '^\\s*[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?\\s*$';

// Every study-level check runs as SQL over the run's datasets, so the fan-in's memory does not grow
// with the study: only the records a check flags come back to the process.

async function unique(db: pg.PoolClient, ids: string[], keys: string[]): Promise<Hit[]> {
  const { rows } = await db.query<Hit>(
    `WITH v AS (
       SELECT d.name AS dataset, d.domain, r.recno, r.subject, r.data,
              row_number() OVER (PARTITION BY r.data->>$2, r.data->>$3, r.data->>$4, r.data->>$5, r.data->>$6, r.data->>$7 ORDER BY d.name, r.recno) AS n
       FROM qc_record r JOIN qc_dataset d ON d.id = r.dataset_id
       WHERE r.dataset_id = ANY($1::uuid[]))
     SELECT dataset, domain, recno, subject, data FROM v WHERE n > 1 ORDER BY dataset, recno`,
    // Up to six keys, each its own parameter; an unused one is '' (absent from every record).
    [ids, ...Array.from({ length: 6 }, (_, i) => keys[i] ?? '')],
  );
  return rows;
}

async function consistent(db: pg.PoolClient, ids: string[], key: string, value: string): Promise<Hit[]> {
  const { rows } = await db.query<Hit>(
    `WITH v AS (
       SELECT d.name AS dataset, d.domain, r.recno, r.subject, r.data, r.data->>$2 AS k, coalesce(r.data->>$3, '') AS val
       FROM qc_record r JOIN qc_dataset d ON d.id = r.dataset_id
       WHERE r.dataset_id = ANY($1::uuid[]) AND coalesce(r.data->>$2, '') <> ''),
     c AS (SELECT k, val, count(*) AS n FROM v GROUP BY k, val),
     top AS (SELECT DISTINCT ON (k) k, val FROM c ORDER BY k, n DESC, val)
     SELECT v.dataset, v.domain, v.recno, v.subject, v.data FROM v JOIN top ON top.k = v.k WHERE v.val <> top.val ORDER BY v.dataset, v.recno`,
    [ids, key, value],
  );
  return rows;
}

async function outliers(db: pg.PoolClient, ids: string[], field: string, sd: number, groupBy: string | null): Promise<Hit[]> {
  const { rows } = await db.query<Hit>(
    `WITH v AS (
       SELECT d.name AS dataset, d.domain, r.recno, r.subject, r.data, (r.data->>$2)::float8 AS x, coalesce(r.data->>$4, '') AS g
       FROM qc_record r JOIN qc_dataset d ON d.id = r.dataset_id
       WHERE r.dataset_id = ANY($1::uuid[]) AND r.data->>$2 ~ $5),
     s AS (SELECT g, avg(x) AS m, stddev_samp(x) AS sd FROM v GROUP BY g)
     SELECT v.dataset, v.domain, v.recno, v.subject, v.data FROM v JOIN s ON s.g = v.g
     WHERE s.sd > 0 AND abs(v.x - s.m) > $3 * s.sd ORDER BY v.dataset, v.recno`,
    [ids, field, sd, groupBy ?? '', NUMERIC],
  );
  return rows.map((r) => ({ ...r, field }));
}

async function orphans(db: pg.PoolClient, ids: string[], dmIds: string[]): Promise<Hit[]> {
  const { rows } = await db.query<Hit>(
    `SELECT d.name AS dataset, d.domain, r.recno, r.subject, r.data
     FROM qc_record r JOIN qc_dataset d ON d.id = r.dataset_id
     WHERE r.dataset_id = ANY($1::uuid[]) AND r.subject IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM qc_record s WHERE s.dataset_id = ANY($2::uuid[]) AND s.subject = r.subject)
     ORDER BY d.name, r.recno`,
    [ids, dmIds],
  );
  return rows;
}

/** Runs one study-level rule over the run's datasets and returns its findings. */
export async function runStudyRule(db: pg.PoolClient, rule: CompiledRuleSpec, datasets: readonly RunDataset[], sites: ReadonlyMap<string, string | null>): Promise<Finding[]> {
  const scopes = rule.scope === '*' ? null : new Set(rule.scope.split(',').map((s) => s.trim()));
  const inScope = datasets.filter((d) => (scopes ? scopes.has(d.domain) : d.subjects));
  const ids = inScope.map((d) => d.id);
  const p = (rule.params ?? {}) as Record<string, unknown>;
  let hits: Hit[] = [];
  let shown: string[] = [];
  if (rule.kind === 'unique') {
    shown = (p.keys as string[]).map(String);
    hits = await unique(db, ids, shown);
  } else if (rule.kind === 'consistent') {
    shown = [String(p.key), String(p.value)];
    hits = await consistent(db, ids, String(p.key), String(p.value));
  } else if (rule.kind === 'outlier') {
    const fields = rule.each ?? [String(p.variable)];
    for (const field of fields) hits.push(...(await outliers(db, ids, field, Number(p.sd ?? 2), typeof p.groupBy === 'string' ? p.groupBy : null)));
    shown = typeof p.groupBy === 'string' ? [String(p.groupBy)] : [];
  } else if (rule.kind === 'orphan') {
    const dm = datasets.filter((d) => d.domain === 'DM').map((d) => d.id);
    hits = await orphans(db, ids, dm);
    shown = ['USUBJID'];
  }
  return hits.map((h) => {
    const variables = h.field ? [h.field, ...shown] : shown;
    return {
      key: findingKey(rule.id, h.dataset, h.subject, recordIdentity(h.domain, h.data, h.recno), h.field ?? ''),
      ruleId: rule.id,
      level: 'study' as const,
      subject: h.subject,
      site: h.subject ? (sites.get(h.subject) ?? null) : null,
      domain: h.domain,
      dataset: h.dataset,
      recno: h.recno,
      variables,
      values: variables.map((v) => text(h.data[v])),
      message: rule.message,
      severity: rule.severity,
    };
  });
}
