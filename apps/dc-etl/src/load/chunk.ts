import { open } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { FileStorage } from '../files/storage.ts';
import type { LoadContext } from './context.ts';
import { ChunkEncoder } from './encode.ts';
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
  /** Milliseconds reading the range, encoding its rows (cleaning included), and in all. */
  readMs?: number;
  encodeMs?: number;
  totalMs?: number;
}

// Read buffers kept for the next chunks (one per chunk read at the same time, a few at most). A
// fresh buffer for every chunk let a worker's memory creep up with the number of chunks it ran
// (freed only when a major GC comes round).
const spareBuffers: Buffer[] = [];
const SPARE_BUFFERS = 4;

/** Bytes `start..end` of a file, in a kept buffer: `release` it once they are encoded. */
async function readBytes(path: string, start: number, end: number): Promise<{ bytes: Buffer; release: () => void }> {
  const size = end - start;
  const found = spareBuffers.findIndex((b) => b.length >= size);
  // Some room above the size: the next chunk is about as big, a little bigger or smaller.
  const buffer = found === -1 ? Buffer.allocUnsafe(size + (size >> 3)) : spareBuffers.splice(found, 1)[0]!;
  const release = () => {
    if (spareBuffers.length < SPARE_BUFFERS) spareBuffers.push(buffer);
  };
  const file = await open(path, 'r');
  try {
    let done = 0;
    while (done < size) {
      const { bytesRead } = await file.read(buffer, done, size - done, start + done);
      if (bytesRead === 0) throw new Error(`the source ends at byte ${start + done}, before the chunk's end (${end})`);
      done += bytesRead;
    }
    return { bytes: buffer.subarray(0, size), release };
  } catch (error) {
    release();
    throw error;
  } finally {
    await file.close();
  }
}

/**
 * A child's work: parse its byte range, clean every record, and load the clean rows into staging
 * and the rejected ones into the reject table with COPY. Everything the chunk wrote before (a
 * retry, a crashed run, a duplicate delivery) is replaced in the same transaction, under a lock
 * on the chunk's row, so the chunk's rows are there once whatever ran before or beside it.
 *
 * The rows are encoded while COPY streams them (a block at a time, with backpressure): this
 * process cleans the next block while PostgreSQL stores the last, and memory holds the chunk's
 * text and a few blocks whatever the file's size.
 */
export async function loadChunk(pool: pg.Pool, storage: FileStorage, load: LoadContext, item: ChunkItem, options: { round: number; signal?: AbortSignal }): Promise<ChunkCounts> {
  let run = await loadOnce(pool, storage, load, item, options.signal);
  // A chunk of a retry (a round after the one that failed the load for its failed chunks) opens
  // the load again and runs.
  if (run.status === 'failed' && (await reopen(pool, item.loadId, options.round))) run = await loadOnce(pool, storage, load, item, options.signal);
  if (run.status === 'loading') return run.counts;
  // One that comes after the fan-in checked the load writes nothing.
  return { ...run.counts, skipped: true };
}

/** One run of a chunk, when its load is loading: the load's status, and the chunk's counts. */
async function loadOnce(pool: pg.Pool, storage: FileStorage, load: LoadContext, item: ChunkItem, signal: AbortSignal | undefined): Promise<{ status: string; counts: ChunkCounts }> {
  const { compiled, source } = load;
  const began = performance.now();
  const { bytes, release } = await readBytes(storage.path(source.key), item.start, item.end);
  const encoder = new ChunkEncoder(bytes, {
    compiled,
    header: source.header,
    loadId: item.loadId,
    chunkNo: item.chunkNo,
    firstLine: item.firstLine,
    lineField: source.lineField,
    delimiter: source.delimiter,
    quote: source.quote,
  });
  const readMs = performance.now() - began;
  let encodeMs = 0;
  // The staging blocks, as the encoder fills them; checked against the plan once all are out.
  async function* blocks(): AsyncGenerator<Buffer> {
    for (;;) {
      signal?.throwIfAborted();
      const t0 = performance.now();
      const more = encoder.run();
      const ready = encoder.stage.take(!more);
      encodeMs += performance.now() - t0;
      yield* ready;
      if (!more) break;
    }
    // The planner and this parser read records the same way; a different count means the source
    // changed under the load (nothing is committed: the transaction rolls back).
    if (encoder.counts.rowsIn !== item.records) throw new Error(`chunk ${item.chunkNo}: found ${encoder.counts.rowsIn} records where the plan has ${item.records}; the source changed`);
  }

  const table = stageTable(item.loadId);
  const columns = ['_chunk', '_line', ...compiled.targetColumns.map((c) => c.name)].map(quoted).join(', ');
  const client = await pool.connect().catch((error: unknown) => {
    release();
    throw error;
  });
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    // A run that comes after the fan-in checked the load (a late duplicate of a chunk whose
    // outcome was already counted) must not touch staging: the checks were made on it. The
    // load's row is shared-locked against the fan-in, the chunk's row locked against a twin run.
    const { rows } = await client.query<{ status: string; runs: number | null }>(
      `SELECT l.status, c.runs FROM etl_load l JOIN etl_chunk c ON c.load_id = l.id AND c.chunk_no = $2
        WHERE l.id = $1 FOR SHARE OF l FOR UPDATE OF c`,
      [item.loadId, item.chunkNo],
    );
    const status = rows[0]?.status ?? (await client.query<{ status: string }>('SELECT status FROM etl_load WHERE id = $1', [item.loadId])).rows[0]?.status;
    if (status !== 'loading') {
      await client.query('ROLLBACK');
      return { status: status ?? 'missing', counts: encoder.counts };
    }
    if (!rows[0]) throw new Error(`chunk ${item.chunkNo} of load ${item.loadId} is not planned`);
    if (rows[0].runs! > 0) {
      await client.query(`DELETE FROM ${table} WHERE _chunk = $1`, [item.chunkNo]);
      await client.query('DELETE FROM etl_reject WHERE load_id = $1 AND chunk_no = $2', [item.loadId, item.chunkNo]);
    }
    await pipeline(Readable.from(blocks()), client.query(copyFrom(`COPY ${table} (${columns}) FROM STDIN`)));
    // PostgreSQL has every staging block: their memory goes to the next chunk.
    encoder.stage.recycle();
    const rejectBlocks = encoder.rejects.take(true);
    if (rejectBlocks.length > 0) {
      await pipeline(Readable.from(rejectBlocks), client.query(copyFrom('COPY etl_reject (load_id, chunk_no, line, column_name, reason, message, raw) FROM STDIN')));
    }
    const counts = encoder.counts;
    await client.query(
      `UPDATE etl_chunk SET rows_in = $3, clean = $4, rejected = $5, blank = $6, filled = $7, runs = runs + 1, loaded_at = now()
        WHERE load_id = $1 AND chunk_no = $2`,
      [item.loadId, item.chunkNo, counts.rowsIn, counts.clean, counts.rejected, counts.blank, encoder.filled],
    );
    await client.query('COMMIT');
  } catch (error) {
    // A failed ROLLBACK leaves the connection in doubt: it is closed, not reused.
    await client.query('ROLLBACK').catch((rollback: Error) => (broken = rollback));
    throw error;
  } finally {
    client.release(broken);
    // The chunk's bytes are read no more (the encoder is done, or given up).
    release();
  }
  return { status: 'loading', counts: { ...encoder.counts, readMs: Math.round(readMs), encodeMs: Math.round(encodeMs), totalMs: Math.round(performance.now() - began) } };
}

/**
 * Opens a load that failed for its failed chunks again, for a chunk (or the fan-in) of a later round
 * of its task (a retry of them): true when the load is loading again (opened by this call or a
 * twin). A load failed for another reason (cancelled, over a threshold) or by this round stays failed.
 */
export async function reopen(pool: pg.Pool, loadId: string, round: number): Promise<boolean> {
  const { rowCount } = await pool.query(
    `UPDATE etl_load SET status = 'loading', error = NULL, checked_at = NULL, failed_round = NULL
      WHERE id = $1 AND status = 'failed' AND failed_round < $2`,
    [loadId, round],
  );
  if ((rowCount ?? 0) > 0) return true;
  const { rows } = await pool.query<{ status: string }>('SELECT status FROM etl_load WHERE id = $1', [loadId]);
  return rows[0]?.status === 'loading';
}
