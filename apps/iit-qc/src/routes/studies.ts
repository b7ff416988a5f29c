import { errorSchema, HttpError, receiveUpload, route, type RouteSpec } from '@fanout/http';
import type pg from 'pg';
import { z } from 'zod';
import { importUpload } from '../data/import.ts';
import { asHttpError, idParams, ownedStudy, tenantOf } from './common.ts';

const studySchema = z.object({ id: z.uuid(), name: z.string(), standard: z.enum(['sdtm', 'redcap']), createdAt: z.iso.datetime() });
const datasetSchema = z.object({
  id: z.uuid(),
  name: z.string(),
  domain: z.string().nullable(),
  format: z.string(),
  filename: z.string(),
  sha256: z.string(),
  bytes: z.number().int(),
  records: z.number().int(),
  version: z.number().int(),
  current: z.boolean(),
  createdAt: z.iso.datetime(),
});

const studyView = (s: { id: string; name: string; standard: string; created_at: Date }) => ({ id: s.id, name: s.name, standard: s.standard, createdAt: s.created_at.toISOString() });
const datasetView = (d: { id: string; name: string; domain: string | null; format: string; filename: string; sha256: string; bytes: number; records: number; version: number; current: boolean; created_at: Date }) => ({
  id: d.id,
  name: d.name,
  domain: d.domain,
  format: d.format,
  filename: d.filename,
  sha256: d.sha256,
  bytes: d.bytes,
  records: d.records,
  version: d.version,
  current: d.current,
  createdAt: d.created_at.toISOString(),
});

export interface StudyRoutesOptions {
  pool: pg.Pool;
  uploadDir: string;
  storageDir: string;
  maxUploadBytes: number;
  /** What a gzip-compressed upload may inflate to. */
  maxInflatedBytes: number;
}

/** Studies and their datasets: create a study, upload files (parsed and stored before any run), list them. */
export function studyRoutes({ pool, uploadDir, storageDir, maxUploadBytes, maxInflatedBytes }: StudyRoutesOptions): RouteSpec[] {
  return [
    route({
      method: 'post',
      path: '/studies',
      summary: 'Create a study (SDTM datasets or a REDCap project)',
      body: z.object({ name: z.string().trim().min(1).max(200), standard: z.enum(['sdtm', 'redcap']) }).strict(),
      responses: { 201: studySchema, 409: errorSchema },
      async handler(c, { body }) {
        const { rows } = await pool.query('INSERT INTO qc_study (id, tenant, name, standard) VALUES (gen_random_uuid(), $1, $2, $3) ON CONFLICT (tenant, name) DO NOTHING RETURNING *', [tenantOf(c), body.name, body.standard]);
        if (!rows[0]) throw new HttpError(409, 'conflict', `body.name: you already have a study named "${body.name}"`, [{ field: 'body.name', rule: 'unique', message: 'a study of this name exists' }]);
        return c.json(studyView(rows[0]), 201);
      },
    }),
    route({
      method: 'get',
      path: '/studies',
      summary: "The tenant's studies",
      responses: { 200: z.object({ studies: z.array(studySchema) }) },
      async handler(c) {
        const { rows } = await pool.query('SELECT * FROM qc_study WHERE tenant = $1 ORDER BY created_at, name', [tenantOf(c)]);
        return c.json({ studies: rows.map(studyView) });
      },
    }),
    route({
      method: 'get',
      path: '/studies/:id',
      summary: 'A study with its current datasets',
      params: idParams,
      responses: { 200: studySchema.extend({ datasets: z.array(datasetSchema) }) },
      async handler(c, { params }) {
        const study = await ownedStudy(pool, c, params.id);
        const created = await pool.query('SELECT * FROM qc_study WHERE id = $1', [study.id]);
        const { rows } = await pool.query('SELECT * FROM qc_dataset WHERE study_id = $1 AND current ORDER BY name', [study.id]);
        return c.json({ ...studyView(created.rows[0]), datasets: rows.map(datasetView) });
      },
    }),
    route({
      method: 'get',
      path: '/studies/:id/datasets',
      summary: "A study's datasets, every version (current ones first)",
      params: idParams,
      responses: { 200: z.object({ datasets: z.array(datasetSchema) }) },
      async handler(c, { params }) {
        const study = await ownedStudy(pool, c, params.id);
        const { rows } = await pool.query('SELECT * FROM qc_dataset WHERE study_id = $1 ORDER BY current DESC, name, version DESC', [study.id]);
        return c.json({ datasets: rows.map(datasetView) });
      },
    }),
    route({
      method: 'post',
      path: '/studies/:id/datasets',
      summary:
        'Upload a file (multipart, field "file"): an SDTM dataset (XPT or CSV, optionally gzip-compressed), define.xml, or a REDCap data dictionary and records export (CSV). Parsed, typed and stored in one transaction; a file that does not parse is refused (400) and nothing of it is kept; over the size limit, 413',
      params: idParams,
      responses: { 201: z.object({ datasets: z.array(datasetSchema.pick({ id: true, name: true, domain: true, format: true, version: true, records: true, sha256: true })) }), 400: errorSchema, 413: errorSchema, 415: errorSchema },
      async handler(c, { params }) {
        const study = await ownedStudy(pool, c, params.id);
        const { file, fields } = await receiveUpload(c, { dir: uploadDir, maxBytes: maxUploadBytes, fields: ['kind', 'name'] });
        try {
          const stored = await importUpload(pool, study, file, { storageDir, maxInflatedBytes, ...(fields.kind ? { kind: fields.kind } : {}), ...(fields.name ? { name: fields.name } : {}) });
          return c.json({ datasets: stored }, 201);
        } catch (error) {
          throw asHttpError(error);
        }
      },
    }),
  ];
}
