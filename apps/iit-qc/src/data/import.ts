import { createGunzip } from 'node:zlib';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { unstorableJsonEscape } from '@fanout/core';
import { byteLimit, unstorableTextAt, type ReceivedFile } from '@fanout/http';
import type pg from 'pg';
import { readSdtmCsv } from './csv.ts';
import { defineTypes, readDefineXml, type DefineMetadata } from './define-xml.ts';
import { readRedcapDictionary, readRedcapRecords, type RedcapDictionary } from './redcap.ts';
import { isSdtmDomain, TRIAL_DESIGN } from './sdtm-domains.ts';
import { UnreadableFileError, type Column, type Row } from './table.ts';
import { readXpt } from './xpt.ts';

export interface Study {
  id: string;
  tenant: string;
  name: string;
  standard: 'sdtm' | 'redcap';
}

/** What an upload stored: one dataset, or one per form of a REDCap records export. */
export interface StoredDataset {
  id: string;
  name: string;
  domain: string | null;
  format: string;
  version: number;
  records: number;
  sha256: string;
}

export type UploadKind = 'xpt' | 'csv' | 'define' | 'dictionary' | 'records';

const BATCH = 2000;

async function isGzip(path: string): Promise<boolean> {
  const handle = await open(path, 'r');
  try {
    const head = Buffer.alloc(2);
    await handle.read(head, 0, 2, 0);
    return head[0] === 0x1f && head[1] === 0x8b;
  } finally {
    await handle.close();
  }
}

/** The kind of an upload: as told, else from the file's name. */
export function kindOf(study: Study, filename: string, told: string | undefined): UploadKind {
  if (told) {
    if (!['xpt', 'csv', 'define', 'dictionary', 'records'].includes(told)) throw new UnreadableFileError(`kind must be one of xpt, csv, define, dictionary, records (got "${told}")`, { field: 'body.kind', rule: 'invalid_value' });
    return told as UploadKind;
  }
  const name = filename.toLowerCase().replace(/\.gz$/, '');
  if (name.endsWith('.xpt')) return 'xpt';
  if (name.endsWith('.xml')) return study.standard === 'sdtm' ? 'define' : 'dictionary';
  if (name.endsWith('.csv')) {
    if (study.standard === 'sdtm') return 'csv';
    if (/dictionar|dictionay|metadata/.test(name)) return 'dictionary';
    return 'records';
  }
  throw new UnreadableFileError(`cannot tell what "${filename}" is: name it .xpt, .csv or .xml, or send the field kind`, { field: 'body.kind', rule: 'required' });
}

/** Current metadata of a study (define.xml or the REDCap dictionary), if uploaded. */
export async function currentMetadata<T>(db: pg.Pool | pg.PoolClient, studyId: string, name: 'define' | 'dictionary'): Promise<T | null> {
  const { rows } = await db.query<{ metadata: T }>('SELECT metadata FROM qc_dataset WHERE study_id = $1 AND name = $2 AND current ORDER BY version DESC LIMIT 1', [studyId, name]);
  return rows[0]?.metadata ?? null;
}

/** A file's text must hold no NUL character (U+0000), nor half a character: PostgreSQL stores neither in JSON. */
function refuseUnstorable(value: unknown, what: string): void {
  const issue = unstorableTextAt(value, '');
  if (!issue) return;
  const held = issue.rule === 'nul_character' ? 'the NUL character (U+0000)' : 'half of a surrogate pair';
  throw new UnreadableFileError(`${what}${issue.field ? ` (${issue.field.slice(1)})` : ''} holds ${held}, which no value may hold`, { rule: issue.rule });
}

async function insertRecords(client: pg.PoolClient, datasetId: string, batch: { recno: number; subject: string | null; row: Row }[]) {
  if (batch.length === 0) return;
  const data = batch.map((b) => JSON.stringify(b.row));
  // JSON writes a NUL (and half a character) as an escape: one look at the text the batch sends anyway.
  for (const [i, json] of data.entries()) if (unstorableJsonEscape(json)) refuseUnstorable(batch[i]!.row, `record ${batch[i]!.recno}`);
  await client.query(
    'INSERT INTO qc_record (dataset_id, recno, subject, data) SELECT $1, t.recno, t.subject, t.data::jsonb FROM unnest($2::int[], $3::text[], $4::text[]) AS t(recno, subject, data)',
    [datasetId, batch.map((b) => b.recno), batch.map((b) => b.subject), data],
  );
}

async function newDataset(
  client: pg.PoolClient,
  study: Study,
  d: { name: string; domain: string | null; format: string; file: ReceivedFile; columns: Column[]; metadata?: unknown },
): Promise<{ id: string; version: number }> {
  refuseUnstorable(d.columns, 'a column');
  refuseUnstorable(d.metadata, 'the file');
  const { rows } = await client.query<{ version: number }>('SELECT coalesce(max(version), 0) + 1 AS version FROM qc_dataset WHERE study_id = $1 AND name = $2', [study.id, d.name]);
  const version = rows[0]!.version;
  await client.query('UPDATE qc_dataset SET current = false WHERE study_id = $1 AND name = $2 AND current', [study.id, d.name]);
  const inserted = await client.query<{ id: string }>(
    `INSERT INTO qc_dataset (id, study_id, name, domain, format, filename, sha256, bytes, records, columns, metadata, version, current)
     VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, $6, $7, 0, $8, $9, $10, true) RETURNING id`,
    [study.id, d.name, d.domain, d.format, d.file.filename, d.file.sha256, d.file.bytes, JSON.stringify(d.columns), d.metadata === undefined ? null : JSON.stringify(d.metadata), version],
  );
  return { id: inserted.rows[0]!.id, version };
}

/** What a gzip-compressed upload may inflate to unless told otherwise: 1 GiB. */
export const MAX_INFLATED_BYTES = 1024 ** 3;

/**
 * Parses an uploaded file and stores it, all in one transaction: the dataset row with its file
 * hash, then every record. A file that does not parse (at its header or on its last line) rolls
 * the transaction back, so nothing of it is stored. A dataset uploaded again becomes a new version;
 * runs keep reading the version they snapshotted.
 */
export async function importUpload(pool: pg.Pool, study: Study, file: ReceivedFile, options: ImportOptions): Promise<StoredDataset[]> {
  try {
    return await importReceived(pool, study, file, options);
  } finally {
    // Kept (moved to the storage) only when stored: whatever refused it, nothing of it stays.
    await rm(file.path, { force: true });
  }
}

export interface ImportOptions {
  kind?: string;
  name?: string;
  storageDir: string;
  /** What a gzip-compressed upload may inflate to. @default 1 GiB */
  maxInflatedBytes?: number;
}

async function importReceived(pool: pg.Pool, study: Study, file: ReceivedFile, options: ImportOptions): Promise<StoredDataset[]> {
  const kind = kindOf(study, file.filename, options.kind);
  if (study.standard === 'sdtm' && (kind === 'dictionary' || kind === 'records')) throw new UnreadableFileError(`an SDTM study takes XPT or CSV datasets and define.xml, not a REDCap ${kind}`, { field: 'body.kind', rule: 'invalid_value' });
  if (study.standard === 'redcap' && kind !== 'dictionary' && kind !== 'records') throw new UnreadableFileError(`a REDCap study takes a records export and a data dictionary (CSV), not ${kind}`, { field: 'body.kind', rule: 'invalid_value' });
  // A gzip-compressed upload is read through a decompressed copy; its hash stays the upload's.
  let path = file.path;
  const plain = `${file.path}.plain`;
  if (await isGzip(file.path)) {
    const max = options.maxInflatedBytes ?? MAX_INFLATED_BYTES;
    const tooBig = new UnreadableFileError(`the gzip-compressed file inflates to more than the limit of ${max} bytes (IIT_MAX_INFLATED_BYTES)`, { rule: 'too_big' });
    try {
      await pipeline(createReadStream(file.path), createGunzip(), byteLimit(max, () => tooBig), createWriteStream(plain));
    } catch (error) {
      await rm(plain, { force: true });
      if (error === tooBig) throw tooBig;
      throw new UnreadableFileError(`the gzip-compressed file does not decompress: ${(error as Error).message}`);
    }
    path = plain;
  }
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    // One upload at a time per study: versions are numbered in order.
    await client.query('SELECT id FROM qc_study WHERE id = $1 FOR UPDATE', [study.id]);
    const stored: StoredDataset[] = [];
    if (kind === 'define') {
      const define = await readDefineXml(path);
      const d = await newDataset(client, study, { name: 'define', domain: null, format: 'define', file, columns: [], metadata: define });
      stored.push({ id: d.id, name: 'define', domain: null, format: 'define', version: d.version, records: 0, sha256: file.sha256 });
    } else if (kind === 'dictionary') {
      const dictionary = await readRedcapDictionary(path);
      const d = await newDataset(client, study, { name: 'dictionary', domain: null, format: 'dictionary', file, columns: [], metadata: dictionary });
      stored.push({ id: d.id, name: 'dictionary', domain: null, format: 'dictionary', version: d.version, records: 0, sha256: file.sha256 });
    } else if (kind === 'records') {
      const dictionary = await currentMetadata<RedcapDictionary>(client, study.id, 'dictionary');
      if (!dictionary) throw new UnreadableFileError('upload the project\u2019s data dictionary first: the records are read against it', { rule: 'dictionary_required' });
      const parsed = await readRedcapRecords(path, dictionary);
      const ids = new Map<string, { id: string; version: number; recno: number; batch: { recno: number; subject: string | null; row: Row }[] }>();
      for (const [form, columns] of parsed.forms) {
        const d = await newDataset(client, study, { name: form, domain: form, format: 'redcap', file, columns });
        ids.set(form, { ...d, recno: 0, batch: [] });
      }
      for await (const { form, subject, row } of parsed.rows()) {
        const target = ids.get(form)!;
        target.batch.push({ recno: ++target.recno, subject, row });
        if (target.batch.length >= BATCH) {
          await insertRecords(client, target.id, target.batch);
          target.batch = [];
        }
      }
      for (const [form, target] of ids) {
        await insertRecords(client, target.id, target.batch);
        await client.query('UPDATE qc_dataset SET records = $2 WHERE id = $1', [target.id, target.recno]);
        stored.push({ id: target.id, name: form, domain: form, format: 'redcap', version: target.version, records: target.recno, sha256: file.sha256 });
      }
    } else {
      const define = await currentMetadata<DefineMetadata>(client, study.id, 'define');
      const stem = file.filename.replace(/(\.xpt|\.csv)?(\.gz)?$/i, '').toUpperCase();
      const table = kind === 'xpt' ? await readXpt(path) : null;
      const name = (options.name ?? table?.name ?? stem).toUpperCase();
      if (!/^[A-Z][A-Z0-9]{0,7}$/.test(name)) throw new UnreadableFileError(`"${name}" is not a dataset name (letters and digits, at most 8)`, { field: 'body.name', rule: 'invalid_value' });
      const fromDefine = define?.datasets.find((d) => d.name === name)?.domain;
      const guessed = fromDefine ?? (isSdtmDomain(name) ? name : isSdtmDomain(name.slice(0, 2)) ? name.slice(0, 2) : name);
      const requireSubject = !TRIAL_DESIGN.has(guessed);
      const parsed = table ?? (await readSdtmCsv(path, { types: defineTypes(define, name), requireSubject }));
      let domain = guessed;
      const d = await newDataset(client, study, { name, domain, format: kind, file, columns: parsed.columns });
      let recno = 0;
      let batch: { recno: number; subject: string | null; row: Row }[] = [];
      for await (const row of parsed.rows()) {
        recno++;
        // The DOMAIN variable names the domain of a split dataset (LBCH is LB), and a dataset's
        // name starts with its domain: DM's records named AE would be checked by AE's rules.
        // (Read on the first record: a file whose first DOMAIN is blank is named by its name.)
        if (recno === 1 && typeof row.DOMAIN === 'string' && row.DOMAIN.trim() !== '') {
          const said = row.DOMAIN.trim().toUpperCase();
          // define.xml names the dataset's domain when it lists it; else its name must start with it.
          const expected = fromDefine?.toUpperCase() ?? (name.startsWith(said) ? said : null);
          if (expected !== said) {
            throw new UnreadableFileError(
              `the file's records are of the domain ${said} (its DOMAIN variable), but the dataset is named ${name}: ${fromDefine ? `define.xml gives ${name} the domain ${fromDefine}` : "a dataset's name starts with its domain (LBCH is LB)"}`,
              { field: options.name ? 'body.name' : 'body.file', rule: 'domain_mismatch' },
            );
          }
          domain = said;
        }
        const subject = typeof row.USUBJID === 'string' && row.USUBJID !== '' ? row.USUBJID : null;
        batch.push({ recno, subject, row });
        if (batch.length >= BATCH) {
          await insertRecords(client, d.id, batch);
          batch = [];
        }
      }
      await insertRecords(client, d.id, batch);
      if ('expectedRows' in parsed && parsed.expectedRows !== recno) throw new UnreadableFileError(`corrupt SAS transport file: ${parsed.expectedRows} observations in the file, ${recno} read`);
      await client.query('UPDATE qc_dataset SET records = $2, domain = $3 WHERE id = $1', [d.id, recno, domain]);
      stored.push({ id: d.id, name, domain, format: kind, version: d.version, records: recno, sha256: file.sha256 });
    }
    await client.query('COMMIT');
    // A large load changes the table's statistics: without fresh ones the planner may scan the whole
    // table for each subject of the next run (autovacuum's analyze comes later, on its own schedule).
    if (stored.reduce((n, d) => n + d.records, 0) >= 10_000) await client.query('ANALYZE qc_record');
    // The file itself is kept, by its hash, beside the parsed tables.
    await mkdir(options.storageDir, { recursive: true });
    await rename(file.path, join(options.storageDir, file.sha256));
    return stored;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
    await rm(plain, { force: true });
  }
}
