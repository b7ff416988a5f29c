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

/** The sample study `name` of `tenant`, made when missing. */
async function sampleStudy(pool: pg.Pool, tenant: string, name: string, standard: 'sdtm' | 'redcap'): Promise<{ study: Study; made: boolean }> {
  const made = await pool.query<Study>(
    'INSERT INTO qc_study (id, tenant, name, standard) VALUES (gen_random_uuid(), $1, $2, $3) ON CONFLICT (tenant, name) DO NOTHING RETURNING id, tenant, name, standard',
    [tenant, name, standard],
  );
  if (made.rows[0]) return { study: made.rows[0], made: true };
  const { rows } = await pool.query<Study>('SELECT id, tenant, name, standard FROM qc_study WHERE tenant = $1 AND name = $2', [tenant, name]);
  return { study: rows[0]!, made: false };
}

/**
 * The sample a local run starts with: the CDISC pilot (SDTM datasets, define.xml, its edit checks
 * with an agent-review rule) and the REDCap clinical trial (REDCap's data quality rules). Each
 * piece is looked for first (a study by name, a file by its name in the study, a rule set by its
 * text), so a start stopped while loading completes the sample at the next one, and a complete
 * sample is left as it is. Returns a line to print when it loaded anything.
 */
export async function seedSamples(pool: pg.Pool, tenant: string, dirs: { uploadDir: string; storageDir: string }): Promise<string | void> {
  let loaded = false;
  const study = async (name: string, standard: 'sdtm' | 'redcap') => {
    const { study, made } = await sampleStudy(pool, tenant, name, standard);
    loaded ||= made;
    return study;
  };
  const file = async (into: Study, path: string, name: string, kind?: string) => {
    const { rowCount } = await pool.query('SELECT 1 FROM qc_dataset WHERE study_id = $1 AND filename = $2 LIMIT 1', [into.id, name]);
    if (rowCount) return;
    await upload(pool, into, path, name, dirs, kind);
    loaded = true;
  };
  const rules = async (into: Study, yaml: string) => {
    const source = readFileSync(join(RULES, yaml), 'utf8');
    const { rowCount } = await pool.query('SELECT 1 FROM qc_rule_set WHERE study_id = $1 AND sha256 = $2 LIMIT 1', [into.id, createHash('sha256').update(source).digest('hex')]);
    if (rowCount) return;
    await storeRuleSet(pool, into, source, tenant);
    loaded = true;
  };
  const pilot = await study('CDISCPILOT01', 'sdtm');
  const sdtm = join(DATA, 'cdiscpilot01-sdtm');
  await file(pilot, join(sdtm, 'define.xml'), 'define.xml');
  for (const f of readdirSync(sdtm).filter((f) => /\.xpt(\.gz)?$/.test(f)).sort()) await file(pilot, join(sdtm, f), f);
  await rules(pilot, 'cdiscpilot01.yaml');
  await rules(pilot, 'agent-review.yaml');
  const trial = await study('REDCap clinical trial', 'redcap');
  const ct = join(DATA, 'redcap', 'clinical-trial-1');
  await file(trial, join(ct, 'dictionary.csv'), 'dictionary.csv', 'dictionary');
  await file(trial, join(ct, 'data.csv'), 'data.csv', 'records');
  await rules(trial, 'redcap-data-quality.yaml');
  if (loaded) return 'studies:  CDISCPILOT01 (SDTM, 306 subjects, Pinnacle 21-style checks) and a REDCap clinical trial (500 records, rules A-H)';
}
