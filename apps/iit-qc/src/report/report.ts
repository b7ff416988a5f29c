import { PassThrough, Readable } from 'node:stream';
import ExcelJS from 'exceljs';
import type pg from 'pg';

/** The parts of a run's report, read from the database (details a page at a time). */
export interface ReportData {
  run: { id: string; study: string; standard: string; ruleSet: string; ruleSetVersion: number; createdAt: string; finishedAt: string | null; summary: Record<string, unknown> | null; cap: number };
  datasets: { name: string; domain: string; format: string; filename: string; records: number; sha256: string; errors: number; warnings: number; notices: number }[];
  issues: { domain: string; ruleId: string; p21: string | null; message: string; severity: string; found: number; excluded: number; capped: boolean }[];
  rules: { ruleId: string; p21: string | null; level: string; kind: string; scope: string; severity: string; message: string; description: string; status: string; issues: number; reason: string | null }[];
}

export interface DetailRow {
  domain: string | null;
  dataset: string | null;
  recno: number | null;
  subject: string | null;
  site: string | null;
  variables: string[];
  values: string[];
  ruleId: string;
  message: string;
  severity: string;
  change: string | null;
  excluded: boolean;
  key: string;
}

export async function reportData(pool: pg.Pool, runId: string): Promise<ReportData> {
  const { rows } = await pool.query(
    `SELECT r.*, s.name AS study, s.standard, rs.name AS rule_set, rs.version, rs.rules FROM qc_run r JOIN qc_study s ON s.id = r.study_id JOIN qc_rule_set rs ON rs.id = r.rule_set_id WHERE r.task_id = $1`,
    [runId],
  );
  const run = rows[0];
  const specs = new Map<string, any>((run.rules.rules as any[]).map((r) => [r.id, r]));
  const cap = Number(run.rules.maxIssuesPerRule ?? 1000);
  const bySeverity = await pool.query<{ dataset: string; severity: string; n: number }>('SELECT dataset, severity, count(*)::int AS n FROM qc_finding WHERE run_id = $1 AND NOT excluded GROUP BY dataset, severity', [runId]);
  const sev = new Map<string, Record<string, number>>();
  for (const r of bySeverity.rows) sev.set(r.dataset, { ...sev.get(r.dataset), [r.severity]: r.n });
  const datasets = (run.datasets as any[]).map((d) => ({ name: d.name, domain: d.domain, format: '', filename: '', records: d.records, sha256: d.sha256, errors: sev.get(d.name)?.error ?? 0, warnings: sev.get(d.name)?.warning ?? 0, notices: sev.get(d.name)?.notice ?? 0 }));
  const files = await pool.query('SELECT id, format, filename FROM qc_dataset WHERE id = ANY($1::uuid[])', [(run.datasets as any[]).map((d) => d.id)]);
  const fileOf = new Map(files.rows.map((f) => [f.id, f]));
  (run.datasets as any[]).forEach((d, i) => Object.assign(datasets[i]!, { format: fileOf.get(d.id)?.format ?? '', filename: fileOf.get(d.id)?.filename ?? '' }));
  const counts = await pool.query<{ domain: string; rule_id: string; found: number; excluded: number }>(
    'SELECT coalesce(domain, \'\') AS domain, rule_id, count(*) FILTER (WHERE NOT excluded)::int AS found, count(*) FILTER (WHERE excluded)::int AS excluded FROM qc_finding WHERE run_id = $1 GROUP BY 1, 2 ORDER BY 1, 2',
    [runId],
  );
  const perRule = new Map<string, number>();
  for (const c of counts.rows) perRule.set(c.rule_id, (perRule.get(c.rule_id) ?? 0) + c.found + c.excluded);
  const issues = counts.rows.map((c) => {
    const spec = specs.get(c.rule_id) ?? {};
    return { domain: c.domain, ruleId: c.rule_id, p21: spec.references?.p21 ?? null, message: spec.message ?? '', severity: spec.severity ?? '', found: c.found, excluded: c.excluded, capped: (perRule.get(c.rule_id) ?? 0) > cap };
  });
  const results = await pool.query('SELECT * FROM qc_rule_result WHERE run_id = $1', [runId]);
  const resultOf = new Map(results.rows.map((r) => [r.rule_id, r]));
  const rules = [...specs.values()].map((s) => {
    const r = resultOf.get(s.id);
    return { ruleId: s.id, p21: s.references?.p21 ?? null, level: s.level, kind: s.kind ?? 'cel', scope: s.scope, severity: s.severity, message: s.message, description: s.description ?? '', status: r?.status ?? 'pending', issues: r?.issues ?? 0, reason: r?.reason ?? null };
  });
  return {
    run: { id: runId, study: run.study, standard: run.standard, ruleSet: run.rule_set, ruleSetVersion: run.version, createdAt: run.created_at.toISOString(), finishedAt: run.finished_at?.toISOString() ?? null, summary: run.summary, cap },
    datasets,
    issues,
    rules,
  };
}

/** The Details rows, at most `cap` per rule (as Pinnacle 21 caps them), a page at a time. */
export async function* detailRows(pool: pg.Pool, runId: string, cap: number): AsyncGenerator<DetailRow> {
  for (let offset = 0; ; offset += 5000) {
    const { rows } = await pool.query(
      `SELECT * FROM (SELECT f.*, row_number() OVER (PARTITION BY f.rule_id ORDER BY f.dataset, f.recno, f.key) AS n FROM qc_finding f WHERE f.run_id = $1) x
       WHERE n <= $2 ORDER BY domain, rule_id, n OFFSET $3 LIMIT 5000`,
      [runId, cap, offset],
    );
    for (const f of rows) yield { domain: f.domain, dataset: f.dataset, recno: f.recno, subject: f.subject, site: f.site, variables: f.variables ?? [], values: f.values ?? [], ruleId: f.rule_id, message: f.message, severity: f.severity, change: f.change, excluded: f.excluded, key: f.key };
    if (rows.length < 5000) return;
  }
}

const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/**
 * The report as an .xlsx written while it streams (exceljs' streaming writer): Dataset Summary,
 * Issue Summary, Details (capped per rule, the cap said on the summary) and Rules, in the layout
 * of a Pinnacle 21 report.
 */
export function xlsxReport(pool: pg.Pool, data: ReportData): ReadableStream<Uint8Array> {
  const out = new PassThrough();
  const wb = new ExcelJS.stream.xlsx.WorkbookWriter({ stream: out, useStyles: true });
  const bold = { font: { bold: true } };
  void (async () => {
    try {
      const head = (ws: ExcelJS.Worksheet, title: string) => {
        ws.addRow([title]).font = { bold: true, size: 14 };
        ws.addRow([`Study: ${data.run.study} (${data.run.standard.toUpperCase()})`]);
        ws.addRow([`Rule set: ${data.run.ruleSet} v${data.run.ruleSetVersion}`]);
        ws.addRow([`Run: ${data.run.id}, finished ${data.run.finishedAt ?? 'not yet'}`]);
        ws.addRow([`Issues kept per rule in Details: ${data.run.cap}`]);
        ws.addRow([]);
      };
      const ds = wb.addWorksheet('Dataset Summary');
      head(ds, 'IIT QC report');
      ds.addRow(['Dataset', 'Domain', 'Source', 'Format', 'Records', 'Errors', 'Warnings', 'Notices', 'SHA-256']).font = bold.font;
      for (const d of data.datasets) ds.addRow([d.name, d.domain, d.filename, d.format, d.records, d.errors, d.warnings, d.notices, d.sha256]).commit();
      ds.addRow(['Total', '', '', '', data.datasets.reduce((n, d) => n + d.records, 0), data.datasets.reduce((n, d) => n + d.errors, 0), data.datasets.reduce((n, d) => n + d.warnings, 0), data.datasets.reduce((n, d) => n + d.notices, 0)]).font = bold.font;
      ds.commit();
      const is = wb.addWorksheet('Issue Summary');
      head(is, 'Issue Summary');
      is.addRow(['Source', 'Rule', 'Pinnacle 21 ID', 'Message', 'Severity', 'Found', 'Excluded', 'Details capped']).font = bold.font;
      for (const i of data.issues) is.addRow([i.domain, i.ruleId, i.p21 ?? '', i.message, cap(i.severity), i.found, i.excluded, i.capped ? `yes, at ${data.run.cap}` : '']).commit();
      is.commit();
      const dt = wb.addWorksheet('Details');
      dt.addRow(['Domain', 'Dataset', 'Record', 'Subject', 'Site', 'Variables', 'Values', 'Rule', 'Message', 'Severity', 'Change', 'Excluded', 'Key']).commit();
      for await (const f of detailRows(pool, data.run.id, data.run.cap)) {
        dt.addRow([f.domain, f.dataset, f.recno, f.subject, f.site, f.variables.join(', '), f.values.join(', '), f.ruleId, f.message, cap(f.severity), f.change ?? '', f.excluded ? 'yes' : '', f.key]).commit();
      }
      dt.commit();
      const rs = wb.addWorksheet('Rules');
      rs.addRow(['Rule', 'Pinnacle 21 ID', 'Level', 'Kind', 'Scope', 'Message', 'Description', 'Severity', 'Status', 'Issues', 'Reason']).commit();
      for (const r of data.rules) rs.addRow([r.ruleId, r.p21 ?? '', r.level, r.kind, r.scope, r.message, r.description, cap(r.severity), r.status, r.issues, r.reason ?? '']).commit();
      rs.commit();
      await wb.commit();
    } catch (error) {
      out.destroy(error as Error);
    }
  })();
  return Readable.toWeb(out) as unknown as ReadableStream<Uint8Array>;
}
