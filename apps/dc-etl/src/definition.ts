import { defineFanout } from '@fanout/core';
import type pg from 'pg';
import { z } from 'zod';
import type { FileStorage } from './files/storage.ts';
import { loadChunk } from './load/chunk.ts';
import { loadContext } from './load/context.ts';
import { finishLoad } from './load/finish.ts';
import { loadInputIssues, PLAN_PAGE, planLoad } from './load/plan.ts';

export interface EtlOptions {
  pool: pg.Pool;
  storage: FileStorage;
  /** Records per chunk when a load does not say. */
  chunkRecords: number;
  /** The most a load's prepared source may take (a gzip inflated, a worksheet as CSV). @default 16 GiB */
  maxSourceBytes?: number;
}

export const etlInput = z.object({
  uploadId: z.uuid({ error: 'must be an upload id (a UUID)' }),
  specId: z.uuid({ error: 'must be a spec id (a UUID)' }),
  /** Records per chunk (one child each). @default ETL_CHUNK_RECORDS */
  chunkRecords: z.int().min(1).max(10_000_000).optional(),
  /** What the load is, for lists ("covid.csv.gz to covid_tests"). */
  label: z.string().max(200).optional(),
});

/** What the manager freezes for a chunk: where its records are. */
export const chunkItem = z.object({
  loadId: z.uuid(),
  chunkNo: z.int().min(1),
  start: z.int().min(0),
  end: z.int().min(0),
  firstLine: z.int().min(1),
  records: z.int().min(1),
});

/**
 * DC's batch load: one task per file, one child per chunk of records. The manager plans chunks
 * at record starts, each child cleans and COPYs its chunk (rerunnable), and the fan-in
 * deduplicates, checks the thresholds and publishes the load in one transaction.
 */
export function etlLoad(options: EtlOptions) {
  return defineFanout({
    name: 'dc_etl_load',
    input: etlInput,
    item: chunkItem,
    result: z.object({ rowsIn: z.int(), clean: z.int(), rejected: z.int(), blank: z.int() }),
    // Without a label (a load started from the console's panel): the file and the table, as
    // `POST /loads` labels them.
    summarize: async (input, { tenant }) => input.label ?? (await loadLabel(options.pool, tenant ?? '', input)),
    options: { child: { retryLimit: 3, retryDelaySeconds: 1 }, manager: { retryDelaySeconds: 1, pageSize: PLAN_PAGE } },
    // Refused at submit: an upload or a spec that is not the tenant's, an upload whose file went,
    // a text file whose format or header does not suit the spec (see loadInputIssues).
    checkInput: (input, { tenant }) => loadInputIssues(options, tenant ?? '', input),
    listItems: (input, ctx) =>
      planLoad(options, ctx.task.id, ctx.task.tenant ?? '', { uploadId: input.uploadId, specId: input.specId, chunkRecords: input.chunkRecords ?? options.chunkRecords }),
    async runItem(item, ctx) {
      const load = await loadContext(options.pool, item.loadId);
      const counts = await loadChunk(options.pool, options.storage, load, item, { round: ctx.item.round, signal: ctx.signal });
      ctx.log(
        counts.skipped
          ? `chunk ${item.chunkNo}: the load was already checked; nothing written`
          : `chunk ${item.chunkNo} (lines from ${item.firstLine}): ${counts.clean} clean, ${counts.rejected} rejected, ${counts.blank} blank in ${counts.totalMs} ms (${counts.readMs} reading, ${counts.encodeMs} cleaning and encoding, the rest waiting on the database)`,
      );
      return { rowsIn: counts.rowsIn, clean: counts.clean, rejected: counts.rejected, blank: counts.blank };
    },
    onFinish: (task) => finishLoad(options.pool, task),
  });
}

export type EtlDefinition = ReturnType<typeof etlLoad>;

/** "covid.csv.gz to covid_tests": the upload's file name and the spec's table (the tenant's own). */
async function loadLabel(pool: pg.Pool, tenant: string, input: { uploadId: string; specId: string }): Promise<string> {
  const { rows } = await pool.query<{ filename: string; target: string }>(
    'SELECT u.filename, s.target FROM etl_upload u, etl_spec s WHERE u.id = $1 AND s.id = $2 AND u.tenant = $3 AND s.tenant = $3',
    [input.uploadId, input.specId, tenant],
  );
  const [row] = rows;
  return row ? `${row.filename} to ${row.target}`.slice(0, 200) : `upload ${input.uploadId.slice(0, 8)}`;
}
