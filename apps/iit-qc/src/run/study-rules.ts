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

// Every study-level check runs as SQL over the run's datasets, and its hits come back a page at a
// time through a cursor, so the fan-in's memory does not grow with the study: one page of flagged
// records (and their subjects' sites) is in the process at once.

/** A check's query: the records it flags, in dataset and record order. */
interface HitQuery {
  sql: string;
  params: unknown[];
  field?: string;
}

/**
 * The flagged records with their data, in dataset and record order, from a query of their keys
 * (dataset_id, recno). A check sorts, groups and hashes only the values it compares: carried
 * along, the records' data made every check of a large dataset spill to disk. Each flagged
 * record's data is then read by its key (OFFSET 0 keeps the planner from joining instead): the
 * planner cannot tell how few records a check flags, and at a million records it hashed the whole
 * table to join them.
 */
const withData = (flagged: string) => `SELECT f.dataset, f.domain, f.recno, r.subject, r.data
     FROM (SELECT d.name AS dataset, d.domain, f.dataset_id, f.recno FROM (${flagged}) f JOIN qc_dataset d ON d.id = f.dataset_id ORDER BY d.name, f.recno OFFSET 0) f
     CROSS JOIN LATERAL (SELECT r.subject, r.data FROM qc_record r WHERE r.dataset_id = f.dataset_id AND r.recno = f.recno OFFSET 0) r
     ORDER BY f.dataset, f.recno`;

function unique(ids: string[], keys: string[]): HitQuery {
  // Each key its own parameter ($2...); the keys are computed first, so the window sorts them
  // and the records' keys only (OFFSET 0: not the records with their data).
  const values = keys.map((_, i) => `r.data->>$${i + 2} AS k${i}`).join(', ');
  const partition = keys.map((_, i) => `k${i}`).join(', ');
  return {
    sql: withData(`SELECT dataset_id, recno FROM (
       SELECT dataset_id, recno, row_number() OVER (PARTITION BY ${partition} ORDER BY name, recno) AS n
       FROM (SELECT r.dataset_id, r.recno, d.name, ${values} FROM qc_record r JOIN qc_dataset d ON d.id = r.dataset_id WHERE r.dataset_id = ANY($1::uuid[]) OFFSET 0) k) v
     WHERE n > 1`),
    params: [ids, ...keys],
  };
}

function consistent(ids: string[], key: string, value: string): HitQuery {
  return {
    sql: withData(`WITH v AS (
       SELECT r.dataset_id, r.recno, r.data->>$2 AS k, coalesce(r.data->>$3, '') AS val
       FROM qc_record r WHERE r.dataset_id = ANY($1::uuid[]) AND coalesce(r.data->>$2, '') <> ''),
     c AS (SELECT k, val, count(*) AS n FROM v GROUP BY k, val),
     top AS (SELECT DISTINCT ON (k) k, val FROM c ORDER BY k, n DESC, val)
     SELECT v.dataset_id, v.recno FROM v JOIN top ON top.k = v.k WHERE v.val <> top.val`),
    params: [ids, key, value],
  };
}

function outliers(ids: string[], field: string, sd: number, groupBy: string | null): HitQuery {
  return {
    sql: withData(`WITH v AS (
       SELECT r.dataset_id, r.recno, (r.data->>$2)::float8 AS x, coalesce(r.data->>$4, '') AS g
       FROM qc_record r WHERE r.dataset_id = ANY($1::uuid[]) AND r.data->>$2 ~ $5),
     s AS (SELECT g, avg(x) AS m, stddev_samp(x) AS sd FROM v GROUP BY g)
     SELECT v.dataset_id, v.recno FROM v JOIN s ON s.g = v.g WHERE s.sd > 0 AND abs(v.x - s.m) > $3 * s.sd`),
    params: [ids, field, sd, groupBy ?? '', NUMERIC],
    field,
  };
}

function orphans(ids: string[], dmIds: string[]): HitQuery {
  return {
    sql: withData(`WITH dm AS (SELECT DISTINCT subject FROM qc_record WHERE dataset_id = ANY($2::uuid[]) AND subject IS NOT NULL)
     SELECT r.dataset_id, r.recno FROM qc_record r
     WHERE r.dataset_id = ANY($1::uuid[]) AND r.subject IS NOT NULL AND NOT EXISTS (SELECT 1 FROM dm WHERE dm.subject = r.subject)`),
    params: [ids, dmIds],
  };
}

/** Hits read per FETCH: what the fan-in holds of a check at once. */
export const HIT_PAGE = 1000;

/**
 * A check's hits, a page at a time, through a cursor of the fan-in's transaction (the caller's
 * `db` is inside BEGIN). The cursor is closed when the pages end or the caller stops early.
 */
async function* hitPages(db: pg.PoolClient, query: HitQuery): AsyncGenerator<Hit[]> {
  await db.query(`DECLARE study_hits NO SCROLL CURSOR FOR ${query.sql}`, query.params);
  try {
    for (;;) {
      const { rows } = await db.query<Hit>(`FETCH ${HIT_PAGE} FROM study_hits`);
      if (rows.length > 0) yield query.field ? rows.map((r) => ({ ...r, field: query.field })) : rows;
      if (rows.length < HIT_PAGE) return;
    }
  } finally {
    await db.query('CLOSE study_hits').catch(() => {});
  }
}

/**
 * The sites of these subjects, for study-level findings: their DM record's SITEID, or else the
 * site their findings of this run carry.
 */
async function sitesOf(db: pg.PoolClient, runId: string, dmIds: readonly string[], subjects: readonly string[]): Promise<Map<string, string | null>> {
  const sites = new Map<string, string | null>();
  if (subjects.length === 0) return sites;
  const found = await db.query<{ subject: string; site: string | null }>(
    "SELECT DISTINCT subject, site FROM qc_finding WHERE run_id = $1 AND subject = ANY($2::text[]) AND level <> 'study'",
    [runId, subjects],
  );
  for (const r of found.rows) sites.set(r.subject, r.site);
  if (dmIds.length > 0) {
    const dm = await db.query<{ subject: string; site: string | null }>("SELECT subject, data->>'SITEID' AS site FROM qc_record WHERE subject = ANY($2::text[]) AND dataset_id = ANY($1::uuid[])", [
      dmIds,
      subjects,
    ]);
    for (const r of dm.rows) sites.set(r.subject, r.site);
  }
  return sites;
}

/**
 * Runs one study-level rule over the run's datasets and yields its findings a page at a time
 * (at most `HIT_PAGE` each).
 */
export async function* runStudyRule(db: pg.PoolClient, runId: string, rule: CompiledRuleSpec, datasets: readonly RunDataset[]): AsyncGenerator<Finding[]> {
  const scopes = rule.scope === '*' ? null : new Set(rule.scope.split(',').map((s) => s.trim()));
  const inScope = datasets.filter((d) => (scopes ? scopes.has(d.domain) : d.subjects));
  const ids = inScope.map((d) => d.id);
  const dm = datasets.filter((d) => d.domain === 'DM').map((d) => d.id);
  const p = (rule.params ?? {}) as Record<string, unknown>;
  let queries: HitQuery[] = [];
  let shown: string[] = [];
  if (rule.kind === 'unique') {
    shown = (p.keys as string[]).map(String);
    queries = [unique(ids, shown)];
  } else if (rule.kind === 'consistent') {
    shown = [String(p.key), String(p.value)];
    queries = [consistent(ids, String(p.key), String(p.value))];
  } else if (rule.kind === 'outlier') {
    const fields = rule.each ?? [String(p.variable)];
    queries = fields.map((field) => outliers(ids, field, Number(p.sd ?? 2), typeof p.groupBy === 'string' ? p.groupBy : null));
    shown = typeof p.groupBy === 'string' ? [String(p.groupBy)] : [];
  } else if (rule.kind === 'orphan') {
    queries = [orphans(ids, dm)];
    shown = ['USUBJID'];
  }
  for (const query of queries) {
    for await (const hits of hitPages(db, query)) {
      const sites = await sitesOf(db, runId, dm, [...new Set(hits.map((h) => h.subject).filter((s): s is string => s !== null))]);
      yield hits.map((h) => {
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
  }
}
