import { createHash, randomUUID } from 'node:crypto';
import { copyFile, mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Fanout } from '@fanout/core';
import type pg from 'pg';
import type { EtlDefinition } from './definition.ts';
import { uploadKey, type FileStorage } from './files/storage.ts';
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
 * duplicate groups and profiles.
 */
export async function seedSample(ctx: SampleContext, tenant: string): Promise<string | void> {
  const existing = await ctx.pool.query('SELECT 1 FROM etl_upload WHERE tenant = $1 LIMIT 1', [tenant]);
  if (existing.rowCount) return;
  const started: string[] = [];
  for (const sample of SAMPLES) {
    const path = new URL(sample.file, DATA).pathname;
    const bytes = await readFile(path);
    const uploadId = randomUUID();
    const target = ctx.storage.path(uploadKey(uploadId));
    await mkdir(dirname(target), { recursive: true });
    await copyFile(path, target);
    const filename = sample.file.split('/').pop()!;
    await ctx.pool.query('INSERT INTO etl_upload (id, tenant, filename, storage_key, bytes, sha256) VALUES ($1, $2, $3, $4, $5, $6)', [
      uploadId,
      tenant,
      filename,
      uploadKey(uploadId),
      bytes.length,
      createHash('sha256').update(bytes).digest('hex'),
    ]);
    const text = await readFile(new URL(sample.spec, DATA), 'utf8');
    const compiled = compileSpec(parseSpec(text));
    const specId = randomUUID();
    await ctx.pool.query('INSERT INTO etl_spec (id, tenant, text, spec, sha256, version, target) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
      specId,
      tenant,
      text,
      JSON.stringify(compiled.spec),
      compiled.hash,
      compiled.spec.version,
      compiled.spec.target,
    ]);
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
  return `samples:  ${started.join(' and ')} (specs in apps/dc-etl/data/specs), a load of each started`;
}
