import { createHash, randomUUID } from 'node:crypto';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { importUpload, type Study } from '../data/import.ts';
import { storeRuleSet } from '../routes/rule-sets.ts';

const DATA = fileURLToPath(new URL('../../data/', import.meta.url));
const RULES = fileURLToPath(new URL('../../rules/', import.meta.url));

async function upload(pool: pg.Pool, study: Study, path: string, name: string, dirs: { uploadDir: string; storageDir: string }, kind?: string) {
  mkdirSync(dirs.uploadDir, { recursive: true });
  const copy = join(dirs.uploadDir, randomUUID());
  copyFileSync(path, copy);
  const bytes = readFileSync(copy);
  await importUpload(pool, study, { path: copy, filename: name, mimeType: 'application/octet-stream', bytes: statSync(copy).size, sha256: createHash('sha256').update(bytes).digest('hex') }, { storageDir: dirs.storageDir, ...(kind ? { kind } : {}) });
}

async function newStudy(pool: pg.Pool, tenant: string, name: string, standard: 'sdtm' | 'redcap'): Promise<Study> {
  const { rows } = await pool.query<Study>('INSERT INTO qc_study (id, tenant, name, standard) VALUES (gen_random_uuid(), $1, $2, $3) RETURNING id, tenant, name, standard', [tenant, name, standard]);
  return rows[0]!;
}

/**
 * The sample a local run starts with: the CDISC pilot (SDTM datasets, define.xml, its edit checks
 * with an agent-review rule) and the REDCap clinical trial (REDCap's data quality rules).
 */
export async function seedSamples(pool: pg.Pool, tenant: string, dirs: { uploadDir: string; storageDir: string }): Promise<string | void> {
  const { rows } = await pool.query('SELECT 1 FROM qc_study WHERE tenant = $1 LIMIT 1', [tenant]);
  if (rows.length > 0) return;
  const pilot = await newStudy(pool, tenant, 'CDISCPILOT01', 'sdtm');
  const sdtm = join(DATA, 'cdiscpilot01-sdtm');
  await upload(pool, pilot, join(sdtm, 'define.xml'), 'define.xml', dirs);
  for (const f of readdirSync(sdtm).filter((f) => /\.xpt(\.gz)?$/.test(f))) await upload(pool, pilot, join(sdtm, f), f, dirs);
  await storeRuleSet(pool, pilot, readFileSync(join(RULES, 'cdiscpilot01.yaml'), 'utf8'), tenant);
  await storeRuleSet(pool, pilot, readFileSync(join(RULES, 'agent-review.yaml'), 'utf8'), tenant);
  const trial = await newStudy(pool, tenant, 'REDCap clinical trial', 'redcap');
  const ct = join(DATA, 'redcap', 'clinical-trial-1');
  await upload(pool, trial, join(ct, 'dictionary.csv'), 'dictionary.csv', dirs, 'dictionary');
  await upload(pool, trial, join(ct, 'data.csv'), 'data.csv', dirs, 'records');
  await storeRuleSet(pool, trial, readFileSync(join(RULES, 'redcap-data-quality.yaml'), 'utf8'), tenant);
  return 'studies:  CDISCPILOT01 (SDTM, 306 subjects, Pinnacle 21-style checks) and a REDCap clinical trial (500 records, rules A-H)';
}
