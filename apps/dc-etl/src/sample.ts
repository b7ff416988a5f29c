import { createHash, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Fanout } from '@fanout/core';
import type pg from 'pg';
import type { EtlDefinition } from './definition.ts';
import { uploadKey, type FileStorage } from './files/storage.ts';
import { storeSpec } from './http/loads.ts';
import { compileSpec, parseSpec } from './spec/compile.ts';

const DATA = new URL('../data/', import.meta.url);

const SAMPLES = [
  { file: 'medicaldata/covid_testing_deid.csv.gz', spec: 'specs/covid.yaml', chunkRecords: 2000 },
  { file: 'medicaldata/messy_uc.xlsx', spec: 'specs/messy_uc.yaml', chunkRecords: undefined },
];

export interface SampleContext {
  pool: pg.Pool;
  storage: FileStorage;
  fanout: Fanout;
  definition: EtlDefinition;
}

/**
 * Sample data for a local run: the COVID testing extract and the messy spreadsheet with their
 * specs, stored as uploads, and one load of each started, so the console opens on real rejects,
 * duplicate groups and profiles. A sample with a load of its file is left alone; a start stopped
 * before a sample's load takes up its stored upload and spec at the next one. Returns a line to
 * print when it started any load.
 */
export async function seedSample(ctx: SampleContext, tenant: string): Promise<string | void> {
  const started: string[] = [];
  for (const sample of SAMPLES) {
    const path = new URL(sample.file, DATA).pathname;
    const filename = sample.file.split('/').pop()!;
    const bytes = await readFile(path);
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const loaded = await ctx.pool.query('SELECT 1 FROM etl_load l JOIN etl_upload u ON u.id = l.upload_id WHERE l.tenant = $1 AND u.filename = $2 AND u.sha256 = $3 LIMIT 1', [tenant, filename, sha256]);
    if (loaded.rowCount) continue;

    const stored = await ctx.pool.query<{ id: string }>('SELECT id FROM etl_upload WHERE tenant = $1 AND filename = $2 AND sha256 = $3 ORDER BY created_at LIMIT 1', [tenant, filename, sha256]);
    let uploadId = stored.rows[0]?.id;
    if (!uploadId || !existsSync(ctx.storage.path(uploadKey(uploadId)))) {
      uploadId = randomUUID();
      const target = ctx.storage.path(uploadKey(uploadId));
      await mkdir(dirname(target), { recursive: true });
      await copyFile(path, target);
      await ctx.pool.query('INSERT INTO etl_upload (id, tenant, filename, storage_key, bytes, sha256) VALUES ($1, $2, $3, $4, $5, $6)', [uploadId, tenant, filename, uploadKey(uploadId), bytes.length, sha256]);
    }
    const text = await readFile(new URL(sample.spec, DATA), 'utf8');
    const compiled = compileSpec(parseSpec(text));
    const storedSpec = await ctx.pool.query<{ id: string }>('SELECT id FROM etl_spec WHERE tenant = $1 AND sha256 = $2 AND text = $3 ORDER BY created_at LIMIT 1', [tenant, compiled.hash, text]);
    const specId = storedSpec.rows[0]?.id ?? (await storeSpec(ctx.pool, tenant, text, compiled));
    const input = { uploadId, specId, label: `${filename} to ${compiled.spec.target}`, ...(sample.chunkRecords ? { chunkRecords: sample.chunkRecords } : {}) };
    const task = await ctx.fanout.submit(ctx.definition, input, { tenant });
    await ctx.pool.query(`INSERT INTO etl_load (id, tenant, upload_id, spec_id, status, chunk_records) VALUES ($1, $2, $3, $4, 'loading', $5) ON CONFLICT (id) DO NOTHING`, [
      task.id,
      tenant,
      uploadId,
      specId,
      sample.chunkRecords ?? 0,
    ]);
    started.push(filename);
  }
  if (started.length > 0) return `samples:  ${started.join(' and ')} (specs in apps/dc-etl/data/specs), a load of each started`;
}
