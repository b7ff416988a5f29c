import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { PermanentError, type InputIssue, type ListedItem } from '@fanout/core';
import { byteLimit } from '@fanout/http';
import type pg from 'pg';
import { loadDir, uploadKey, type FileStorage } from '../files/storage.ts';
import { compileSpec, headerIssues, parseSpec, SpecError, type CompiledSpec } from '../spec/compile.ts';
import { RecordScanner } from '../source/csv.ts';
import { formatOf, inspectSource, SourceError, type SourceInfo } from '../source/inspect.ts';
import { xlsxToCsv } from '../source/xlsx.ts';
import type { ChunkItem } from './chunk.ts';
import type { PreparedSource } from './context.ts';
import { createStageSql } from './tables.ts';

export interface PlanInput {
  uploadId: string;
  specId: string;
  chunkRecords: number;
}

/** A chunk ends after this many bytes even with fewer records (very wide rows). */
const CHUNK_MAX_BYTES = 64 * 1024 * 1024;
/**
 * Chunks listed at a time, and the manager's page size (the fan-out core inserts a page of
 * items when it is full): small, so children start on the first chunks while the scan goes on
 * (a page of 1,000, the core's default, held every chunk of a 2.5 GB file back until the scan
 * ended). Two chunks of the default 50,000 records: the first children start once 100,000
 * records are scanned, as with four of 25,000 (four of 50,000 held them back 30-50 ms more).
 */
export const PLAN_PAGE = 2;
const SCAN_BYTES = 1 << 20;

/** A stream that transcodes text to UTF-8, for sources in UTF-16 or a one-byte code page. */
function toUtf8(encoding: string): Transform {
  const decoder = new TextDecoder(encoding);
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      done(null, Buffer.from(decoder.decode(chunk, { stream: true }), 'utf8'));
    },
    flush(done) {
      done(null, Buffer.from(decoder.decode(), 'utf8'));
    },
  });
}

/**
 * Makes the bytes children read: the upload itself when it is plain UTF-8 text, otherwise a
 * UTF-8 CSV written beside it (gzip inflated, UTF-16 or windows-1252 transcoded, a BOM dropped,
 * a worksheet's rows led by their row number). Written to a temporary name and renamed, so a
 * manager that runs again never changes a file a child is reading.
 */
async function prepareSource(storage: FileStorage, loadId: string, uploadPath: string, info: SourceInfo, maxBytes: number): Promise<{ key: string; offset: number; lineField: boolean }> {
  if (info.format !== 'xlsx' && info.compression === null && info.encoding === 'utf-8') return { key: '', offset: info.bom, lineField: false };
  const key = `${loadDir(loadId)}/source.csv`;
  const target = storage.path(key);
  const temporary = `${target}.${process.pid}.tmp`;
  await mkdir(dirname(target), { recursive: true });
  // What the upload expands to is bounded: its own size does not bound it.
  const limit = () => byteLimit(maxBytes, () => new SourceError(`the file expands to more than ${maxBytes} bytes (ETL_MAX_SOURCE_BYTES)`, 'too_big'));
  try {
    if (info.format === 'xlsx') {
      await xlsxToCsv(uploadPath, info.sheet!, info.headerRow, info.header.length, temporary, limit());
    } else {
      const steps: NodeJS.ReadWriteStream[] = [];
      if (info.compression === 'gzip') steps.push(createGunzip());
      if (info.encoding !== 'utf-8') steps.push(toUtf8(info.encoding));
      await pipeline([createReadStream(uploadPath), ...steps, limit(), createWriteStream(temporary)]);
    }
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
  await rename(temporary, target);
  // A UTF-8 BOM stays in an inflated file; transcoded text drops it (TextDecoder does).
  return { key, offset: info.format !== 'xlsx' && info.encoding === 'utf-8' ? info.bom : 0, lineField: info.format === 'xlsx' };
}

export interface PlanDeps {
  pool: pg.Pool;
  storage: FileStorage;
  /** The most the prepared source may take. @default 16 GiB */
  maxSourceBytes?: number;
}

/**
 * A load's input as a submit checks it (the definition's `checkInput`): the upload and the spec
 * are the tenant's, the upload's file is still stored, and (text, plain or gzip: its first 256 KB)
 * its header has the columns the spec reads, as `POST /loads` checks a file sent with its spec. A
 * workbook's header is left to the manager: reading it inflates the workbook. The manager checks
 * everything again.
 */
export async function loadInputIssues(deps: PlanDeps, tenant: string, input: { uploadId: string; specId: string }): Promise<InputIssue[]> {
  const { rows } = await deps.pool.query<{ filename: string | null; text: string | null }>(
    `SELECT (SELECT filename FROM etl_upload WHERE id = $1 AND tenant = $3) AS filename,
            (SELECT text FROM etl_spec WHERE id = $2 AND tenant = $3) AS text`,
    [input.uploadId, input.specId, tenant],
  );
  const { filename, text } = rows[0]!;
  const issues: InputIssue[] = [];
  if (filename === null) issues.push({ field: 'uploadId', rule: 'not_found', message: `no upload ${input.uploadId} (of yours)` });
  if (text === null) issues.push({ field: 'specId', rule: 'not_found', message: `no spec ${input.specId} (of yours)` });
  if (filename === null || text === null) return issues;
  const uploadPath = deps.storage.path(uploadKey(input.uploadId));
  try {
    await stat(uploadPath);
    const compiled = compileSpec(parseSpec(text));
    if (formatOf(filename, compiled.spec.source) !== 'xlsx') await sourceForSpec(uploadPath, filename, compiled);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [{ field: 'uploadId', rule: 'gone', message: `the upload ${UPLOAD_GONE}` }];
    if (error instanceof SourceError) return [{ field: 'uploadId', rule: error.rule, message: error.message }];
    if (!(error instanceof SpecError)) throw error;
    // What the spec reads and the file lacks: said of the spec, or of the file's header.
    return error.issues.map((i) => ({ field: i.field.startsWith('spec') ? 'specId' : 'uploadId', rule: i.rule, message: `${i.field}: ${i.message}` }));
  }
  return [];
}

const UPLOAD_GONE = 'is no longer stored (it went with the load that was discarded); upload the file again';

/** The stored file read as the spec says (format, encoding, header), its header checked against the spec's columns. */
async function sourceForSpec(uploadPath: string, filename: string, compiled: CompiledSpec): Promise<SourceInfo> {
  const info = await inspectSource(uploadPath, filename, compiled.spec.source);
  const issues = headerIssues(compiled, info.header);
  if (issues.length > 0) throw new SpecError(issues);
  return info;
}

/**
 * The manager's work for one load: check the file against the spec, prepare the source, create
 * the staging table, then scan the source once and cut it into chunks of `chunkRecords`
 * records at record starts. Chunks are listed as they are found (the file is never in memory)
 * and recorded first, so the children find their rows. Deterministic: a manager that runs again
 * plans the same chunks.
 */
export async function* planLoad(deps: PlanDeps, loadId: string, tenant: string, input: PlanInput): AsyncGenerator<ListedItem<ChunkItem>[]> {
  const { pool, storage } = deps;
  const { rows } = await pool.query<{ filename: string; upload_tenant: string; text: string; spec_tenant: string }>(
    `SELECT u.filename, u.tenant AS upload_tenant, s.text, s.tenant AS spec_tenant
       FROM etl_upload u, etl_spec s WHERE u.id = $1 AND s.id = $2`,
    [input.uploadId, input.specId],
  );
  const row = rows[0];
  if (!row || row.upload_tenant !== tenant || row.spec_tenant !== tenant) {
    throw new PermanentError('the upload or the spec is not one of yours', { code: 'not_found' });
  }
  await pool.query(
    `INSERT INTO etl_load (id, tenant, upload_id, spec_id, status, chunk_records) VALUES ($1, $2, $3, $4, 'loading', $5) ON CONFLICT (id) DO NOTHING`,
    [loadId, tenant, input.uploadId, input.specId, input.chunkRecords],
  );
  let compiled: CompiledSpec;
  let info: SourceInfo;
  const uploadPath = storage.path(uploadKey(input.uploadId));
  // Its file goes when the last load reading it is discarded: said plainly, without the server's path.
  // (Looked at first, and again wherever the file is read: a discard may come in between.)
  const uploadGone = (error: unknown) =>
    (error as NodeJS.ErrnoException).code === 'ENOENT' ? new PermanentError(`the upload ${input.uploadId} ${UPLOAD_GONE}`, { code: 'upload_gone' }) : error;
  try {
    await stat(uploadPath);
    compiled = compileSpec(parseSpec(row.text));
    info = await sourceForSpec(uploadPath, row.filename, compiled);
  } catch (error) {
    if (error instanceof SpecError) throw new PermanentError(`${error.message}${error.issues.length > 1 ? ` (and ${error.issues.length - 1} more)` : ''}`, { code: 'invalid_spec' });
    if (error instanceof SourceError) throw new PermanentError(error.message, { code: error.rule });
    throw uploadGone(error);
  }

  const prepared = await prepareSource(storage, loadId, uploadPath, info, deps.maxSourceBytes ?? 16 * 1024 ** 3).catch((error: unknown) => {
    throw error instanceof SourceError ? new PermanentError(error.message, { code: error.rule }) : uploadGone(error);
  });
  const source: PreparedSource = { ...info, key: prepared.key || uploadKey(input.uploadId), lineField: prepared.lineField };
  await pool.query(createStageSql(loadId, compiled.targetColumns));
  await pool.query(`UPDATE etl_load SET source = $2, stage_table = $3 WHERE id = $1`, [loadId, JSON.stringify(source), `l_${loadId.replaceAll('-', '')}`]);

  const scanner = new RecordScanner(source.delimiter, source.quote);
  let chunkNo = 0;
  let current: { start: number; end: number; firstLine: number; records: number } | null = null;
  const pending: ChunkItem[] = [];
  // Records above the header (and the header) are not data; a prepared worksheet has none.
  let headerSeen = source.lineField;
  const base = prepared.offset;
  const onRecord = (span: { start: number; end: number; line: number }) => {
    if (!headerSeen) {
      if (span.line >= source.headerRow) headerSeen = true;
      return;
    }
    if (!current) current = { start: base + span.start, end: base + span.end, firstLine: span.line, records: 0 };
    current.end = base + span.end;
    current.records++;
    if (current.records >= input.chunkRecords || current.end - current.start >= CHUNK_MAX_BYTES) {
      pending.push({ loadId, chunkNo: ++chunkNo, ...current });
      current = null;
    }
  };
  const record = async (items: ChunkItem[]) => {
    await pool.query(
      `INSERT INTO etl_chunk (load_id, chunk_no, start_byte, end_byte, first_line, records)
       SELECT $1, * FROM unnest($2::int[], $3::bigint[], $4::bigint[], $5::int[], $6::int[])
       ON CONFLICT (load_id, chunk_no) DO NOTHING`,
      [loadId, items.map((i) => i.chunkNo), items.map((i) => i.start), items.map((i) => i.end), items.map((i) => i.firstLine), items.map((i) => i.records)],
    );
    return items.map((i) => ({ key: `chunk-${String(i.chunkNo).padStart(6, '0')}`, snapshot: i }));
  };
  // Read through one buffer, reused: the scan leaves no garbage behind it, so the worker's
  // memory does not grow with the file (a stream allocates a new buffer for every read).
  const file = await open(storage.path(source.key), 'r').catch((error: unknown) => {
    throw uploadGone(error);
  });
  try {
    const buffer = Buffer.allocUnsafe(SCAN_BYTES);
    for (let position = base; ; ) {
      const { bytesRead } = await file.read(buffer, 0, SCAN_BYTES, position);
      if (bytesRead === 0) break;
      position += bytesRead;
      scanner.push(buffer.subarray(0, bytesRead), onRecord);
      while (pending.length >= PLAN_PAGE) {
        yield await record(pending.splice(0, PLAN_PAGE));
      }
    }
  } finally {
    await file.close();
  }
  scanner.finish(onRecord);
  if (current) pending.push({ loadId, chunkNo: ++chunkNo, ...(current as { start: number; end: number; firstLine: number; records: number }) });
  if (pending.length > 0) yield await record(pending);
  await pool.query('UPDATE etl_load SET chunks = $2 WHERE id = $1', [loadId, chunkNo]);
}
