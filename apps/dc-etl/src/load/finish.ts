import type { FinishedTask } from '@fanout/core';
import type pg from 'pg';
import { compileSpec, parseSpec } from '../spec/compile.ts';
import { reopen } from './chunk.ts';
import type { PreparedSource } from './context.ts';
import { markDuplicates } from './dedupe.ts';
import { computeProfile } from './profile.ts';
import { publishInTransaction, publishLoad } from './publish.ts';
import { stageTable } from './tables.ts';

/** What a load's manifest records: what came in, what went where, from which file and spec. */
export interface Manifest {
  loadId: string;
  target: string;
  file: { name: string; bytes: number; sha256: string; format: string; compression: string | null; encoding: string; bom: boolean };
  spec: { version: string; sha256: string };
  chunks: number;
  /** Records read below the header (blank ones included). */
  rowsIn: number;
  clean: number;
  /** Rows rejected (a row with several problems counts once). */
  rejected: number;
  /** Problems recorded for the rejected rows. */
  problems: number;
  blank: number;
  duplicates: number;
  duplicateGroups: number;
  /** The rows that are (or will be) published: clean minus duplicates. */
  rows: number;
  rejectRate: number;
  /** Source columns without a single value in the file (a nameless one as `(column 7, no name)`). */
  emptyColumns: string[];
  /** Source columns the spec does not read. */
  unmappedColumns: string[];
  thresholds: { maxRejectRate: number | null; maxRejects: number | null };
  published: number | null;
  publishedAt: string | null;
  /** Where the fan-in's time went, in milliseconds (the publish adds `publishMs`). */
  timings: { checkMs: number; dedupeMs: number; profileMs: number; publishMs?: number };
}

/**
 * Fails a load still loading. `retryRound`: the failure is that round's failed chunks, which a
 * retry of them (a later round of the task) may mend: the first of its chunks opens the load again.
 */
async function fail(pool: pg.Pool, loadId: string, error: string, manifest: Manifest | null, retryRound: number | null = null): Promise<void> {
  await pool.query(
    `UPDATE etl_load SET status = 'failed', error = $2, manifest = COALESCE($3::jsonb, manifest), checked_at = now(), failed_round = $4 WHERE id = $1 AND status = 'loading'`,
    [loadId, error, manifest ? JSON.stringify(manifest) : null, retryRound],
  );
}

/**
 * The fan-in of a load, run once the last chunk settled (and again after a crash: every step is
 * conditional on the load's status). Checks that staging holds what the chunks loaded, marks
 * duplicates (the first by source line is kept unless the spec orders otherwise) and records
 * their groups, checks the reject thresholds, profiles the columns, and publishes when the spec
 * says so. A load over a threshold fails with the reason and publishes nothing.
 */
export async function finishLoad(pool: pg.Pool, task: FinishedTask): Promise<void> {
  const { rows } = await pool.query<{ status: string; failed_round: number | null; text: string; source: PreparedSource | null; filename: string; bytes: string; sha256: string; chunks: number | null }>(
    `SELECT l.status, l.failed_round, s.text, l.source, u.filename, u.bytes, u.sha256, l.chunks
       FROM etl_load l JOIN etl_spec s ON s.id = l.spec_id JOIN etl_upload u ON u.id = l.upload_id WHERE l.id = $1`,
    [task.id],
  );
  const load = rows[0];
  if (!load) return; // the manager failed before it recorded the load
  if (load.status === 'ready') {
    const compiled = compileSpec(parseSpec(load.text));
    if (compiled.spec.publish.auto) await publishLoad(pool, task.id, { onlyIfReady: true });
    return;
  }
  // The fan-in of an earlier round (its fan-in was still running when the retry came) may have
  // failed the load after every chunk of this round had loaded: none of them opened it again.
  if (load.status === 'failed' && load.failed_round !== null && load.failed_round < task.round && (await reopen(pool, task.id, task.round))) load.status = 'loading';
  if (load.status !== 'loading') return;
  if (task.status !== 'completed' || task.failed > 0 || !load.source || load.chunks === null) {
    const why = task.status === 'cancelled' ? 'the load was cancelled' : task.failed > 0 ? `${task.failed} of ${task.total} chunks failed` : (task.error ?? `the load ended ${task.status}`);
    // A load whose chunks were all planned can be mended by retrying the task's failed chunks
    // (a person's cancel is final: such a task is not retried).
    const mendable = task.failed > 0 && task.status !== 'cancelled' && task.stopReason !== 'manager_failed' && load.source !== null && load.chunks !== null;
    await fail(pool, task.id, mendable ? `${why}; nothing was published (retry the failed chunks to go on)` : `${why}; nothing was published`, null, mendable ? task.round : null);
    return;
  }
  const compiled = compileSpec(parseSpec(load.text));
  const source = load.source;
  const began = performance.now();
  const table = stageTable(task.id);
  const totals = (
    await pool.query<{ rows_in: string; clean: string; rejected: string; blank: string; filled: number[] | null }>(
      `SELECT coalesce(sum(rows_in), 0) AS rows_in, coalesce(sum(clean), 0) AS clean, coalesce(sum(rejected), 0) AS rejected,
              coalesce(sum(blank), 0) AS blank, array(SELECT DISTINCT unnest(filled) FROM etl_chunk WHERE load_id = $1) AS filled
         FROM etl_chunk WHERE load_id = $1`,
      [task.id],
    )
  ).rows[0]!;
  const staged = Number((await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)).rows[0]!.n);
  const clean = Number(totals.clean);
  if (staged !== clean) {
    await fail(pool, task.id, `staging holds ${staged} rows where the chunks loaded ${clean} (was the database restarted during the load?); load the file again`, null);
    return;
  }
  const problems = Number((await pool.query<{ n: string }>('SELECT count(*) AS n FROM etl_reject WHERE load_id = $1', [task.id])).rows[0]!.n);

  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const locked = await client.query<{ status: string }>('SELECT status FROM etl_load WHERE id = $1 FOR UPDATE', [task.id]);
    if (locked.rows[0]?.status !== 'loading') {
      await client.query('ROLLBACK');
      return;
    }
    const checkMs = Math.round(performance.now() - began);
    const dedupeStart = performance.now();
    const dup = compiled.spec.dedupe ? await markDuplicates(client, task.id, compiled) : { duplicates: 0, groups: 0 };
    const dedupeMs = Math.round(performance.now() - dedupeStart);
    const rejected = Number(totals.rejected);
    const rowsIn = Number(totals.rows_in);
    const blank = Number(totals.blank);
    const read = rowsIn - blank;
    const filled = new Set(totals.filled ?? []);
    const used = new Set(compiled.sourceColumns);
    const manifest: Manifest = {
      loadId: task.id,
      target: compiled.spec.target,
      file: { name: load.filename, bytes: Number(load.bytes), sha256: load.sha256, format: source.format, compression: source.compression, encoding: source.encoding, bom: source.bom > 0 },
      spec: { version: compiled.spec.version, sha256: compiled.hash },
      chunks: load.chunks,
      rowsIn,
      clean,
      rejected,
      problems,
      blank,
      duplicates: dup.duplicates,
      duplicateGroups: dup.groups,
      rows: clean - dup.duplicates,
      rejectRate: read === 0 ? 0 : rejected / read,
      emptyColumns: source.header.flatMap((h, i) => (filled.has(i) ? [] : [h || `(column ${i + 1}, no name)`])),
      unmappedColumns: source.header.filter((h) => h !== '' && !used.has(h)),
      thresholds: { maxRejectRate: compiled.spec.thresholds.maxRejectRate ?? null, maxRejects: compiled.spec.thresholds.maxRejects ?? null },
      published: null,
      publishedAt: null,
      timings: { checkMs, dedupeMs, profileMs: 0 },
    };
    const over = thresholdBreach(manifest);
    if (over) {
      await client.query(`UPDATE etl_load SET status = 'failed', error = $2, manifest = $3, checked_at = now() WHERE id = $1`, [task.id, `${over}; nothing was published`, JSON.stringify(manifest)]);
    } else {
      const profileStart = performance.now();
      await computeProfile(client, task.id, compiled);
      manifest.timings.profileMs = Math.round(performance.now() - profileStart);
      await client.query(`UPDATE etl_load SET status = 'ready', manifest = $2, checked_at = now() WHERE id = $1`, [task.id, JSON.stringify(manifest)]);
      // Published with the checks in one transaction: a load is never seen ready on its way.
      if (compiled.spec.publish.auto) await publishInTransaction(client, task.id, { onlyIfReady: true });
    }
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch((rollback: Error) => (broken = rollback));
    throw error;
  } finally {
    client.release(broken);
  }
}

function thresholdBreach(m: Manifest): string | null {
  const { maxRejectRate, maxRejects } = m.thresholds;
  if (maxRejects !== null && m.rejected > maxRejects) return `${m.rejected} rows were rejected, over the limit of ${maxRejects} (thresholds.maxRejects)`;
  if (maxRejectRate !== null && m.rejectRate > maxRejectRate) {
    return `${(m.rejectRate * 100).toFixed(2)}% of the rows were rejected (${m.rejected} of ${m.rowsIn - m.blank}), over the limit of ${(maxRejectRate * 100).toFixed(2)}% (thresholds.maxRejectRate)`;
  }
  return null;
}
