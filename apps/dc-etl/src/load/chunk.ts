import { open } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { FileStorage } from '../files/storage.ts';
import { parseRecords } from '../source/csv.ts';
import { RowCleaner } from './clean.ts';
import type { LoadContext } from './context.ts';
import { copyField } from './copy-text.ts';
import { quoted, stageTable } from './tables.ts';

/** One chunk as the manager planned it: a byte range that starts at a record. */
export interface ChunkItem {
  loadId: string;
  chunkNo: number;
  start: number;
  end: number;
  firstLine: number;
  records: number;
}

export interface ChunkCounts {
  rowsIn: number;
  clean: number;
  rejected: number;
  blank: number;
  /** The load was already checked: this run wrote nothing. */
  skipped?: boolean;
  /** Milliseconds spent reading and cleaning, and writing (the transaction). */
  cleanMs?: number;
  writeMs?: number;
}

const PIECE = 64 * 1024;

/** Text accumulated in pieces of about 64 KB, so COPY gets few large writes. */
class Pieces {
  readonly list: string[] = [];
  #current = '';
  add(line: string) {
    this.#current += line;
    if (this.#current.length >= PIECE) {
      this.list.push(this.#current);
      this.#current = '';
    }
  }
  done(): string[] {
    if (this.#current) this.list.push(this.#current);
    this.#current = '';
    return this.list;
  }
}

async function readRange(path: string, start: number, end: number): Promise<Buffer> {
  const file = await open(path, 'r');
  try {
    const buffer = Buffer.allocUnsafe(end - start);
    let done = 0;
    while (done < buffer.length) {
      const { bytesRead } = await file.read(buffer, done, buffer.length - done, start + done);
      if (bytesRead === 0) throw new Error(`the source ends at byte ${start + done}, before the chunk's end (${end})`);
      done += bytesRead;
    }
    return buffer;
  } finally {
    await file.close();
  }
}

/**
 * A child's work: parse its byte range, clean every record, and load the clean rows into staging
 * and the rejected ones into the reject table with COPY. Everything the chunk wrote before (a
 * retry, a crashed run, a duplicate delivery) is replaced in the same transaction, under a lock
 * on the chunk's row, so the chunk's rows are there once whatever ran before or beside it.
 */
export async function loadChunk(pool: pg.Pool, storage: FileStorage, load: LoadContext, item: ChunkItem, signal?: AbortSignal): Promise<ChunkCounts> {
  const { compiled, source } = load;
  const began = performance.now();
  const bytes = await readRange(storage.path(source.key), item.start, item.end);
  const text = bytes.toString('utf8');
  const cleaner = new RowCleaner(compiled, source.header);
  const width = source.header.length;
  const filled = new Array<boolean>(width).fill(false);
  let unfilled = width;
  const stage = new Pieces();
  const rejects = new Pieces();
  const counts: ChunkCounts = { rowsIn: 0, clean: 0, rejected: 0, blank: 0 };
  const prefix = `${item.loadId}\t${item.chunkNo}\t`;
  let line = item.firstLine;
  parseRecords(text, source.delimiter, source.quote, (record) => {
    let fields = record.fields;
    let recordLine = line;
    let rawStart = record.start;
    line += record.lines;
    if (source.lineField) {
      recordLine = Number(fields[0]);
      rawStart = record.start + fields[0]!.length + 1;
      fields = fields.slice(1);
    }
    counts.rowsIn++;
    if (fields.every((f) => f.trim() === '')) {
      counts.blank++;
      return;
    }
    if (unfilled > 0) {
      for (let i = 0; i < width && i < fields.length; i++) {
        if (!filled[i] && fields[i]!.trim() !== '') {
          filled[i] = true;
          unfilled--;
        }
      }
    }
    const raw = text.slice(rawStart, record.end);
    const result = record.problem
      ? { values: null, problems: [{ column: null, reason: 'malformed', message: record.problem }] }
      : cleaner.clean(fields);
    if (result.values) {
      counts.clean++;
      let out = `${item.chunkNo}\t${recordLine}`;
      for (const v of result.values) out += `\t${copyField(v)}`;
      stage.add(`${out}\n`);
    } else {
      counts.rejected++;
      for (const p of result.problems) {
        rejects.add(`${prefix}${recordLine}\t${copyField(p.column)}\t${copyField(p.reason)}\t${copyField(p.message)}\t${copyField(raw)}\n`);
      }
    }
  });
  signal?.throwIfAborted();
  // The planner and this parser read records the same way; a different count means the source
  // changed under the load.
  if (counts.rowsIn !== item.records) throw new Error(`chunk ${item.chunkNo}: found ${counts.rowsIn} records where the plan has ${item.records}; the source changed`);

  counts.cleanMs = Math.round(performance.now() - began);
  const writing = performance.now();
  const table = stageTable(item.loadId);
  const columns = ['_chunk', '_line', ...compiled.targetColumns.map((c) => c.name)].map(quoted).join(', ');
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    // A run that comes after the fan-in checked the load (a late duplicate of a chunk whose
    // outcome was already counted) must not touch staging: the checks were made on it.
    const state = await client.query<{ status: string }>('SELECT status FROM etl_load WHERE id = $1 FOR SHARE', [item.loadId]);
    if (state.rows[0]?.status !== 'loading') {
      await client.query('ROLLBACK');
      return { ...counts, skipped: true };
    }
    const { rows } = await client.query<{ runs: number }>('SELECT runs FROM etl_chunk WHERE load_id = $1 AND chunk_no = $2 FOR UPDATE', [item.loadId, item.chunkNo]);
    if (!rows[0]) throw new Error(`chunk ${item.chunkNo} of load ${item.loadId} is not planned`);
    if (rows[0].runs > 0) {
      await client.query(`DELETE FROM ${table} WHERE _chunk = $1`, [item.chunkNo]);
      await client.query('DELETE FROM etl_reject WHERE load_id = $1 AND chunk_no = $2', [item.loadId, item.chunkNo]);
    }
    const stagePieces = stage.done();
    if (stagePieces.length > 0) await pipeline(Readable.from(stagePieces), client.query(copyFrom(`COPY ${table} (${columns}) FROM STDIN`)));
    const rejectPieces = rejects.done();
    if (rejectPieces.length > 0) {
      await pipeline(Readable.from(rejectPieces), client.query(copyFrom('COPY etl_reject (load_id, chunk_no, line, column_name, reason, message, raw) FROM STDIN')));
    }
    const filledIndices = filled.flatMap((f, i) => (f ? [i] : []));
    await client.query(
      `UPDATE etl_chunk SET rows_in = $3, clean = $4, rejected = $5, blank = $6, filled = $7, runs = runs + 1, loaded_at = now()
        WHERE load_id = $1 AND chunk_no = $2`,
      [item.loadId, item.chunkNo, counts.rowsIn, counts.clean, counts.rejected, counts.blank, filledIndices],
    );
    await client.query('COMMIT');
    counts.writeMs = Math.round(performance.now() - writing);
  } catch (error) {
    // A failed ROLLBACK leaves the connection in doubt: it is closed, not reused.
    await client.query('ROLLBACK').catch((rollback: Error) => (broken = rollback));
    throw error;
  } finally {
    client.release(broken);
  }
  return counts;
}
