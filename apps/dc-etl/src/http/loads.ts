import { randomUUID } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { FanoutError, type Fanout } from '@fanout/core';
import { csvLines, errorSchema, HttpError, invalidRequest, receiveUpload, route, textStream, type AuthEnv, type ReceivedFile, type RouteSpec } from '@fanout/http';
import type { Context } from 'hono';
import type pg from 'pg';
import { z } from 'zod';
import type { EtlDefinition } from '../definition.ts';
import { uploadKey, type FileStorage } from '../files/storage.ts';
import { discardLoad, LoadStateError, publishLoad } from '../load/publish.ts';
import { compileSpec, headerIssues, parseSpec, SpecError, type CompiledSpec } from '../spec/compile.ts';
import { inspectSource, SourceError, type SourceInfo } from '../source/inspect.ts';

export interface LoadRoutesOptions {
  pool: pg.Pool;
  storage: FileStorage;
  fanout: Fanout;
  definition: EtlDefinition;
  maxUploadBytes: number;
}

const MAX_SPEC_BYTES = 1024 * 1024;
const idParams = z.object({ id: z.uuid({ error: 'must be a load id (a UUID)' }) });
const pageQuery = {
  limit: z.coerce.number({ error: 'must be an integer from 1 to 1000' }).int().min(1).max(1000).default(100),
  cursor: z.string().regex(/^\d{1,9}$/, { error: 'must be the nextCursor of the previous page' }).optional(),
};
const chunkRecordsField = z.coerce.number({ error: 'must be an integer from 1 to 10000000' }).int().min(1).max(10_000_000);

const loadView = z.object({
  id: z.uuid(),
  status: z.enum(['loading', 'ready', 'published', 'failed', 'discarded']),
  error: z.string().nullable(),
  target: z.string(),
  filename: z.string(),
  specVersion: z.string(),
  chunks: z.number().nullable(),
  chunksLoaded: z.number(),
  rowsIn: z.number(),
  clean: z.number(),
  rejected: z.number(),
  manifest: z.record(z.string(), z.unknown()).nullable(),
  createdAt: z.string(),
  checkedAt: z.string().nullable(),
  publishedAt: z.string().nullable(),
  discardedAt: z.string().nullable(),
});
type LoadView = z.infer<typeof loadView>;

const LOAD_SELECT = `
  SELECT l.id, l.status, l.error, s.target, u.filename, s.version, l.chunks, l.manifest, l.created_at, l.checked_at, l.published_at, l.discarded_at,
         (SELECT count(*) FROM etl_chunk c WHERE c.load_id = l.id AND c.loaded_at IS NOT NULL)::int AS loaded,
         (SELECT coalesce(sum(rows_in), 0) FROM etl_chunk c WHERE c.load_id = l.id)::bigint AS rows_in,
         (SELECT coalesce(sum(clean), 0) FROM etl_chunk c WHERE c.load_id = l.id)::bigint AS clean,
         (SELECT coalesce(sum(rejected), 0) FROM etl_chunk c WHERE c.load_id = l.id)::bigint AS rejected
    FROM etl_load l JOIN etl_spec s ON s.id = l.spec_id JOIN etl_upload u ON u.id = l.upload_id`;

const iso = (d: Date | null) => (d ? d.toISOString() : null);
/** A count as the load's manifest records it once checked (its chunk rows may be gone since), else the chunks' sum. */
const checked = (r: Record<string, any>, key: string, sum: unknown): number => (typeof r.manifest?.[key] === 'number' ? r.manifest[key] : Number(sum));
function toView(r: Record<string, any>): LoadView {
  return {
    id: r.id,
    status: r.status,
    error: r.error,
    target: r.target,
    filename: r.filename,
    specVersion: r.version,
    chunks: r.chunks,
    // A discarded load's chunk rows are gone: it had loaded every chunk its manifest counts.
    chunksLoaded: r.status === 'discarded' ? checked(r, 'chunks', r.loaded) : r.loaded,
    rowsIn: checked(r, 'rowsIn', r.rows_in),
    clean: checked(r, 'clean', r.clean),
    rejected: checked(r, 'rejected', r.rejected),
    manifest: r.manifest,
    createdAt: r.created_at.toISOString(),
    checkedAt: iso(r.checked_at),
    publishedAt: iso(r.published_at),
    discardedAt: iso(r.discarded_at),
  };
}

/** Spec problems as a 400 naming each field (`body.spec.columns.3.source`). */
function specHttpError(error: SpecError, prefix: string): HttpError {
  const issues = error.issues.map((i) => ({ field: `${prefix}.${i.field}`, rule: i.rule, message: i.message }));
  return new HttpError(400, 'invalid_request', `${issues[0]!.field}: ${issues[0]!.message}`, issues);
}

function sourceHttpError(error: SourceError): HttpError {
  return new HttpError(error.status, 'invalid_request', `body.file: ${error.message}`, [{ field: 'body.file', rule: error.rule, message: error.message }]);
}

/** The spec text of an upload field, parsed and compiled, or a 400 naming what is wrong. */
function compileSpecText(text: string | undefined, field: string): CompiledSpec {
  if (text === undefined || text.trim() === '') throw new HttpError(400, 'invalid_request', `${field}: a mapping spec (YAML or JSON) is required`, [{ field, rule: 'required', message: 'a mapping spec (YAML or JSON) is required' }]);
  try {
    return compileSpec(parseSpec(text));
  } catch (error) {
    if (error instanceof SpecError) throw specHttpError(error, field.replace(/\.spec$/, ''));
    throw error;
  }
}

/** Stores a compiled spec as the tenant wrote it; resolves its id. */
export async function storeSpec(pool: pg.Pool, tenant: string, text: string, compiled: CompiledSpec): Promise<string> {
  const id = randomUUID();
  await pool.query('INSERT INTO etl_spec (id, tenant, text, spec, sha256, version, target) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
    id,
    tenant,
    text,
    JSON.stringify(compiled.spec),
    compiled.hash,
    compiled.spec.version,
    compiled.spec.target,
  ]);
  return id;
}

async function storeUpload(pool: pg.Pool, storage: FileStorage, tenant: string, file: ReceivedFile): Promise<string> {
  const id = randomUUID();
  await storage.adopt(file.path, uploadKey(id));
  // A file no row names would stay on disk for good: it goes if the row does not come.
  await pool
    .query('INSERT INTO etl_upload (id, tenant, filename, storage_key, bytes, sha256) VALUES ($1, $2, $3, $4, $5, $6)', [id, tenant, file.filename, uploadKey(id), file.bytes, file.sha256])
    .catch(async (error: unknown) => {
      await storage.remove(uploadKey(id)).catch(() => {});
      throw error;
    });
  return id;
}

async function inspectReceived(file: ReceivedFile, compiled: CompiledSpec | null): Promise<SourceInfo> {
  try {
    const info = await inspectSource(file.path, file.filename, compiled?.spec.source ?? { quote: '"', headerRow: 1 });
    if (compiled) {
      const issues = headerIssues(compiled, info.header);
      if (issues.length > 0) throw specHttpError(new SpecError(issues), 'body');
    }
    return info;
  } catch (error) {
    if (error instanceof SourceError) throw sourceHttpError(error);
    throw error;
  }
}

async function ownedLoad(c: Context<AuthEnv>, pool: pg.Pool, id: string): Promise<Record<string, any>> {
  const { rows } = await pool.query(`${LOAD_SELECT} WHERE l.id = $1 AND l.tenant = $2`, [id, c.get('principal').tenant]);
  if (!rows[0]) throw new HttpError(404, 'not_found', `load ${id} not found`);
  return rows[0];
}

const page = <T>(rows: T[], limit: number, offset: number) => ({ rows: rows.slice(0, limit), nextCursor: rows.length > limit ? String(offset + limit) : null });

/** What a multipart upload is refused with: a bad file or field (400), too large (413), not multipart or of an unknown type (415). */
const MULTIPART_REFUSALS = { 400: errorSchema, 413: errorSchema, 415: errorSchema };

const rejectSchema = z.object({ chunk: z.number(), line: z.number(), column: z.string().nullable(), reason: z.string(), message: z.string(), raw: z.string() });
const REJECT_COLUMNS = [
  { header: 'line', value: (r: any) => r.line },
  { header: 'chunk', value: (r: any) => r.chunk_no },
  { header: 'column', value: (r: any) => r.column_name },
  { header: 'reason', value: (r: any) => r.reason },
  { header: 'message', value: (r: any) => r.message },
  { header: 'raw', value: (r: any) => r.raw },
];

/**
 * The loads API: start a load from an upload and a spec (or from ids of ones stored before), see
 * its chunks, rejects (also as CSV), duplicate groups and column profile, publish or discard it.
 * Every route is the tenant's own: another tenant's load is answered as missing.
 */
export function loadRoutes(options: LoadRoutesOptions): RouteSpec[] {
  const { pool, storage, fanout, definition } = options;

  async function start(c: Context<AuthEnv>, input: { uploadId: string; specId: string; chunkRecords?: number; label?: string }) {
    const tenant = c.get('principal').tenant;
    const task = await fanout.submit(definition, input, { tenant }).catch((error: unknown) => {
      // The definition's checkInput (the stored file went meanwhile): said of this request's fields.
      if (!(error instanceof FanoutError) || !error.issues) throw error;
      throw invalidRequest(error.issues.map((i) => ({ ...i, field: i.field === 'input.specId' ? 'body.spec' : 'body.file' })));
    });
    await pool.query(
      `INSERT INTO etl_load (id, tenant, upload_id, spec_id, status, chunk_records) VALUES ($1, $2, $3, $4, 'loading', $5) ON CONFLICT (id) DO NOTHING`,
      [task.id, tenant, input.uploadId, input.specId, input.chunkRecords ?? 0],
    );
    c.header('Location', `${c.req.path.replace(/\/loads$/, '')}/loads/${task.id}`);
    return c.json({ id: task.id, status: 'loading', uploadId: input.uploadId, specId: input.specId }, 202);
  }

  return [
    route({
      method: 'post',
      path: '/loads',
      summary: 'Start a load: multipart/form-data with the file (CSV, TSV, gzip of either, .xlsx) in "file", the mapping spec (YAML or JSON) in "spec", and optionally "chunkRecords"',
      responses: { 202: z.object({ id: z.uuid(), status: z.literal('loading'), uploadId: z.uuid(), specId: z.uuid() }), ...MULTIPART_REFUSALS },
      async handler(c) {
        const { file, fields } = await receiveUpload(c, { dir: storage.incoming, maxBytes: options.maxUploadBytes, fields: ['spec', 'chunkRecords'] });
        try {
          const compiled = compileSpecText(fields.spec, 'body.spec');
          let chunkRecords: number | undefined;
          if (fields.chunkRecords !== undefined) {
            const parsed = chunkRecordsField.safeParse(fields.chunkRecords);
            if (!parsed.success) {
              const issue = parsed.error.issues[0]!;
              throw new HttpError(400, 'invalid_request', `body.chunkRecords: ${issue.message}`, [{ field: 'body.chunkRecords', rule: issue.code, message: issue.message }]);
            }
            chunkRecords = parsed.data;
          }
          await inspectReceived(file, compiled);
          const tenant = c.get('principal').tenant;
          const specId = await storeSpec(pool, tenant, fields.spec!, compiled);
          const uploadId = await storeUpload(pool, storage, tenant, file);
          return await start(c, { uploadId, specId, ...(chunkRecords ? { chunkRecords } : {}), label: `${file.filename} to ${compiled.spec.target}`.slice(0, 200) });
        } finally {
          await rm(file.path, { force: true });
        }
      },
    }),
    route({
      method: 'post',
      path: '/uploads',
      summary: 'Store a file for a later load (multipart/form-data, field "file"); answers its id and header',
      responses: { 201: z.object({ uploadId: z.uuid(), filename: z.string(), bytes: z.number(), sha256: z.string(), format: z.string(), encoding: z.string(), header: z.array(z.string()) }), ...MULTIPART_REFUSALS },
      async handler(c) {
        const { file } = await receiveUpload(c, { dir: storage.incoming, maxBytes: options.maxUploadBytes });
        try {
          const info = await inspectReceived(file, null);
          const uploadId = await storeUpload(pool, storage, c.get('principal').tenant, file);
          return c.json({ uploadId, filename: file.filename, bytes: file.bytes, sha256: file.sha256, format: info.format, encoding: info.encoding, header: info.header }, 201);
        } finally {
          await rm(file.path, { force: true });
        }
      },
    }),
    route({
      method: 'post',
      path: '/specs',
      summary: 'Store a mapping spec (multipart/form-data, the YAML or JSON file in "file"); a spec that does not parse is refused naming the field',
      responses: { 201: z.object({ specId: z.uuid(), version: z.string(), target: z.string(), sha256: z.string(), columns: z.array(z.object({ name: z.string(), type: z.string() })) }), ...MULTIPART_REFUSALS },
      async handler(c) {
        const { file } = await receiveUpload(c, { dir: storage.incoming, maxBytes: MAX_SPEC_BYTES });
        try {
          const text = await readFile(file.path, 'utf8');
          const compiled = compileSpecText(text, 'body.spec');
          const specId = await storeSpec(pool, c.get('principal').tenant, text, compiled);
          return c.json({ specId, version: compiled.spec.version, target: compiled.spec.target, sha256: compiled.hash, columns: compiled.targetColumns }, 201);
        } finally {
          await rm(file.path, { force: true });
        }
      },
    }),
    route({
      method: 'get',
      path: '/specs',
      summary: "The tenant's stored specs, newest first",
      query: z.object({ limit: pageQuery.limit }).strict(),
      responses: { 200: z.object({ specs: z.array(z.object({ id: z.uuid(), version: z.string(), target: z.string(), label: z.string(), createdAt: z.string() })) }) },
      async handler(c, { query }) {
        const { rows } = await pool.query('SELECT id, version, target, created_at FROM etl_spec WHERE tenant = $1 ORDER BY created_at DESC LIMIT $2', [c.get('principal').tenant, query.limit]);
        return c.json({ specs: rows.map((r) => ({ id: r.id, version: r.version, target: r.target, label: `${r.target} (version ${r.version})`, createdAt: r.created_at.toISOString() })) });
      },
    }),
    route({
      method: 'get',
      path: '/loads',
      summary: "The tenant's loads, newest first",
      query: z.object(pageQuery).strict(),
      responses: { 200: z.object({ loads: z.array(loadView), nextCursor: z.string().nullable() }) },
      async handler(c, { query }) {
        const offset = Number(query.cursor ?? 0);
        const { rows } = await pool.query(`${LOAD_SELECT} WHERE l.tenant = $1 ORDER BY l.created_at DESC, l.id LIMIT $2 OFFSET $3`, [c.get('principal').tenant, query.limit + 1, offset]);
        const p = page(rows, query.limit, offset);
        return c.json({ loads: p.rows.map(toView), nextCursor: p.nextCursor });
      },
    }),
    route({
      method: 'get',
      path: '/loads/:id',
      summary: 'A load: its status, counts so far, and its manifest once checked',
      params: idParams,
      responses: { 200: loadView },
      async handler(c, { params }) {
        return c.json(toView(await ownedLoad(c, pool, params.id)));
      },
    }),
    route({
      method: 'get',
      path: '/loads/:id/overview',
      summary: 'A load at a glance, as label and value pairs: status, counts, reject rate, file and spec',
      params: idParams,
      responses: { 200: z.object({ facts: z.array(z.object({ name: z.string(), value: z.string() })) }) },
      async handler(c, { params }) {
        const view = toView(await ownedLoad(c, pool, params.id));
        const m = view.manifest as Record<string, any> | null;
        const count = (n: unknown) => (typeof n === 'number' ? n.toLocaleString('en-US') : '');
        const when = (at: string | null) => (at ? `${at.slice(0, 19).replace('T', ' ')} UTC` : '');
        const facts: [string, string][] = [
          ['Status', view.status],
          ['Reason', view.error ?? ''],
          ['Target', view.target],
          ['File', `${view.filename}${m ? ` (${count(m.file.bytes)} bytes, ${m.file.format}${m.file.compression ? `, ${m.file.compression}` : ''}, ${m.file.encoding}${m.file.bom ? ', BOM' : ''})` : ''}`],
          ['File SHA-256', m?.file.sha256 ?? ''],
          ['Spec', `version ${view.specVersion}${m ? `, SHA-256 ${m.spec.sha256.slice(0, 12)}` : ''}`],
          ['Chunks loaded', `${count(view.chunksLoaded)} of ${view.chunks === null ? '?' : count(view.chunks)}`],
          ['Rows in', count(view.rowsIn)],
          ['Clean', count(view.clean)],
          ['Rejected', `${count(view.rejected)}${m ? ` (${(m.rejectRate * 100).toFixed(2)}%; ${count(m.problems)} problems)` : ''}`],
          ['Blank rows', m ? count(m.blank) : ''],
          ['Duplicates dropped', m ? `${count(m.duplicates)} in ${count(m.duplicateGroups)} groups` : ''],
          ['Published rows', m?.published !== undefined && m?.published !== null ? count(m.published) : ''],
          ['Published at', when(view.publishedAt)],
          ['Discarded at', when(view.discardedAt)],
          ['Empty source columns', m?.emptyColumns?.join(', ') ?? ''],
          ['Unmapped source columns', m?.unmappedColumns?.join(', ') ?? ''],
        ];
        return c.json({ facts: facts.filter(([, v]) => v !== '').map(([name, value]) => ({ name, value })) });
      },
    }),
    route({
      method: 'get',
      path: '/loads/:id/chunks',
      summary: "A load's chunks: byte range, first line, rows in, clean, rejected, blank, runs",
      params: idParams,
      query: z.object(pageQuery).strict(),
      responses: { 200: z.object({ chunks: z.array(z.record(z.string(), z.unknown())), nextCursor: z.string().nullable() }) },
      async handler(c, { params, query }) {
        await ownedLoad(c, pool, params.id);
        const offset = Number(query.cursor ?? 0);
        const { rows } = await pool.query(
          `SELECT chunk_no, start_byte, end_byte, first_line, records, rows_in, clean, rejected, blank, runs, loaded_at FROM etl_chunk WHERE load_id = $1 ORDER BY chunk_no LIMIT $2 OFFSET $3`,
          [params.id, query.limit + 1, offset],
        );
        const p = page(rows, query.limit, offset);
        return c.json({
          chunks: p.rows.map((r) => ({
            chunk: r.chunk_no,
            startByte: Number(r.start_byte),
            endByte: Number(r.end_byte),
            firstLine: r.first_line,
            records: r.records,
            rowsIn: r.rows_in,
            clean: r.clean,
            rejected: r.rejected,
            blank: r.blank,
            runs: r.runs,
            status: r.loaded_at ? 'loaded' : 'pending',
          })),
          nextCursor: p.nextCursor,
        });
      },
    }),
    route({
      method: 'get',
      path: '/loads/:id/rejects',
      summary: "A load's rejected rows, one per problem, by source line: column, reason, message and the row's text",
      params: idParams,
      query: z.object({ ...pageQuery, reason: z.string().max(100).optional(), column: z.string().max(100).optional() }).strict(),
      responses: { 200: z.object({ rejects: z.array(rejectSchema), nextCursor: z.string().nullable() }) },
      async handler(c, { params, query }) {
        await ownedLoad(c, pool, params.id);
        const offset = Number(query.cursor ?? 0);
        const { rows } = await pool.query(
          `SELECT chunk_no, line, column_name, reason, message, raw FROM etl_reject
            WHERE load_id = $1 AND ($2::text IS NULL OR reason = $2) AND ($3::text IS NULL OR column_name = $3)
            ORDER BY line, reason, column_name LIMIT $4 OFFSET $5`,
          [params.id, query.reason ?? null, query.column ?? null, query.limit + 1, offset],
        );
        const p = page(rows, query.limit, offset);
        return c.json({ rejects: p.rows.map((r) => ({ chunk: r.chunk_no, line: r.line, column: r.column_name, reason: r.reason, message: r.message, raw: r.raw })), nextCursor: p.nextCursor });
      },
    }),
    route({
      method: 'get',
      path: '/loads/:id/rejects.csv',
      summary: "A load's rejects as CSV (line, chunk, column, reason, message, raw), streamed",
      params: idParams,
      responses: { 200: { contentType: 'text/csv' } },
      async handler(c, { params }) {
        await ownedLoad(c, pool, params.id);
        async function* rows() {
          // Pages by ranges of source lines: the reject table is never read whole into memory.
          const { rows: range } = await pool.query<{ max: number | null }>('SELECT max(line) AS max FROM etl_reject WHERE load_id = $1', [params.id]);
          const max = range[0]?.max ?? 0;
          for (let from = 0; from <= max; from += 20_000) {
            const { rows: batch } = await pool.query(
              `SELECT chunk_no, line, column_name, reason, message, raw FROM etl_reject WHERE load_id = $1 AND line > $2 AND line <= $3 ORDER BY line, reason, column_name`,
              [params.id, from, from + 20_000],
            );
            yield* batch;
          }
        }
        c.header('content-type', 'text/csv; charset=utf-8');
        c.header('content-disposition', `attachment; filename="rejects-${params.id}.csv"`);
        return c.body(textStream(csvLines(REJECT_COLUMNS, rows())));
      },
    }),
    route({
      method: 'get',
      path: '/loads/:id/reasons',
      summary: 'Reject reasons by column: rows, and sample lines with their text',
      params: idParams,
      responses: { 200: z.object({ reasons: z.array(z.object({ key: z.string(), reason: z.string(), column: z.string().nullable(), rows: z.number(), message: z.string(), sampleLines: z.array(z.number()), linesText: z.string(), sample: z.string() })) }) },
      async handler(c, { params }) {
        await ownedLoad(c, pool, params.id);
        const { rows } = await pool.query(
          `SELECT reason, column_name, count(*)::int AS rows, min(message) AS message,
                  (array_agg(line ORDER BY line))[1:5] AS lines, (array_agg(raw ORDER BY line))[1] AS sample
             FROM etl_reject WHERE load_id = $1 GROUP BY reason, column_name ORDER BY count(*) DESC, reason, column_name LIMIT 500`,
          [params.id],
        );
        return c.json({
          reasons: rows.map((r) => ({ key: `${r.reason}:${r.column_name ?? ''}`, reason: r.reason, column: r.column_name, rows: r.rows, message: r.message, sampleLines: r.lines, linesText: (r.lines as number[]).join(', '), sample: r.sample })),
        });
      },
    }),
    route({
      method: 'get',
      path: '/loads/:id/duplicates',
      summary: 'Duplicate groups on the dedupe key: the line kept and the lines dropped',
      params: idParams,
      query: z.object(pageQuery).strict(),
      responses: { 200: z.object({ duplicates: z.array(z.object({ group: z.number(), key: z.array(z.unknown()), keyText: z.string(), keptLine: z.number(), droppedLines: z.array(z.number()), droppedText: z.string(), dropped: z.number() })), nextCursor: z.string().nullable() }) },
      async handler(c, { params, query }) {
        await ownedLoad(c, pool, params.id);
        const offset = Number(query.cursor ?? 0);
        const { rows } = await pool.query('SELECT group_no, key, kept_line, dropped_lines FROM etl_duplicate WHERE load_id = $1 ORDER BY group_no LIMIT $2 OFFSET $3', [params.id, query.limit + 1, offset]);
        const p = page(rows, query.limit, offset);
        return c.json({
          duplicates: p.rows.map((r) => ({ group: r.group_no, key: r.key, keyText: (r.key as unknown[]).map((k) => (k === null ? 'NULL' : String(k))).join(' | '), keptLine: r.kept_line, droppedLines: r.dropped_lines, droppedText: (r.dropped_lines as number[]).join(', '), dropped: r.dropped_lines.length })),
          nextCursor: p.nextCursor,
        });
      },
    }),
    route({
      method: 'get',
      path: '/loads/:id/profile',
      summary: 'Column profile of the rows the load publishes: null rate, distinct count, min, max, top values',
      params: idParams,
      responses: {
        200: z.object({
          columns: z.array(z.object({ column: z.string(), type: z.string(), rows: z.number(), nulls: z.number(), nullRate: z.number(), nullPercent: z.string(), distinct: z.number(), min: z.string().nullable(), max: z.string().nullable(), top: z.array(z.object({ value: z.string(), count: z.number() })), topText: z.string() })),
        }),
      },
      async handler(c, { params }) {
        await ownedLoad(c, pool, params.id);
        const { rows } = await pool.query('SELECT column_name, type, rows, nulls, distinct_count, min, max, top FROM etl_profile WHERE load_id = $1 ORDER BY position', [params.id]);
        return c.json({
          columns: rows.map((r) => {
            const total = Number(r.rows);
            const nulls = Number(r.nulls);
            const top = r.top as { value: string; count: number }[];
            return { column: r.column_name, type: r.type, rows: total, nulls, nullRate: total === 0 ? 0 : nulls / total, nullPercent: `${(total === 0 ? 0 : (100 * nulls) / total).toFixed(1)}%`, distinct: Number(r.distinct_count), min: r.min, max: r.max, top, topText: top.map((t) => `${t.value} (${t.count})`).join(', ') };
          }),
        });
      },
    }),
    route({
      method: 'post',
      path: '/loads/:id/publish',
      summary: 'Publish a checked load (status ready) in one transaction; publishing a published load again changes nothing',
      params: idParams,
      responses: { 200: z.object({ id: z.uuid(), status: z.string(), published: z.number() }), 409: errorSchema },
      async handler(c, { params }) {
        await ownedLoad(c, pool, params.id);
        try {
          const result = await publishLoad(pool, params.id);
          return c.json({ id: params.id, ...result });
        } catch (error) {
          if (error instanceof LoadStateError) throw new HttpError(409, 'conflict', error.message);
          throw error;
        }
      },
    }),
    route({
      method: 'post',
      path: '/loads/:id/discard',
      summary: 'Discard a finished load: its published rows, staging, rejects, duplicates, profile and files are removed',
      params: idParams,
      responses: { 200: z.object({ id: z.uuid(), status: z.literal('discarded') }), 409: errorSchema },
      async handler(c, { params }) {
        await ownedLoad(c, pool, params.id);
        try {
          const { files } = await discardLoad(pool, params.id);
          for (const key of files) await storage.remove(key);
          return c.json({ id: params.id, status: 'discarded' as const });
        } catch (error) {
          if (error instanceof LoadStateError) throw new HttpError(409, 'conflict', error.message);
          throw error;
        }
      },
    }),
  ];
}
