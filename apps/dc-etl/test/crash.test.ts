import { renameSync } from 'node:fs';
import { waitFor } from '@fanout/testdb';
import { describe, expect, it } from 'vitest';
import { loadChunk, type ChunkItem } from '../src/load/chunk.ts';
import { loadContext } from '../src/load/context.ts';
import { finishLoad } from '../src/load/finish.ts';
import { dataPath, etlTest, fileOf, json, postLoad, settled, specText, type EtlTest } from './harness.ts';

async function publishedRows(t: EtlTest, target: string): Promise<string> {
  const { rows } = await t.pool.query(`SELECT table_name FROM etl_target WHERE tenant = 'team-a' AND name = $1`, [target]);
  const table = await t.pool.query(`SELECT * FROM etl_pub."${rows[0].table_name}" ORDER BY _line`);
  return JSON.stringify(table.rows.map(({ _load_id, ...row }) => row));
}

async function chunk(t: EtlTest, loadId: string, chunkNo: number): Promise<ChunkItem> {
  const { rows } = await t.pool.query('SELECT start_byte, end_byte, first_line, records FROM etl_chunk WHERE load_id = $1 AND chunk_no = $2', [loadId, chunkNo]);
  const r = rows[0];
  return { loadId, chunkNo, start: Number(r.start_byte), end: Number(r.end_byte), firstLine: r.first_line, records: r.records };
}

/** Waits until the load's whole plan is dispatched and three of its chunks loaded (more are to come). */
async function threeLoaded(t: EtlTest, id: string): Promise<void> {
  const loaded = async () =>
    (await t.pool.query('SELECT count(*)::int AS n FROM etl_chunk c JOIN fanout_task f ON f.id = c.load_id WHERE c.load_id = $1 AND c.loaded_at IS NOT NULL AND f.dispatched_at IS NOT NULL', [id])).rows[0]
      .n as number;
  await waitFor(async () => (await loaded()) >= 3, { timeoutMs: 60_000, message: 'the chunks dispatched and three of them loaded' });
}

/** Where the load's prepared source is (what its chunks read). */
async function sourcePath(t: EtlTest, id: string): Promise<string> {
  return t.rt.ctx.services.storage.path((await t.pool.query("SELECT source->>'key' AS key FROM etl_load WHERE id = $1", [id])).rows[0].key);
}

describe('crash safety', () => {
  it('a worker SIGKILLed mid-load and duplicate deliveries of chunks: the published table is identical to an undisturbed load', async () => {
    await using t = await etlTest();
    await t.api();
    const file = fileOf(dataPath('medicaldata/covid_testing_deid.csv.gz'));
    const [first] = await t.workers(1, { FANOUT_WORKER_CONCURRENCY: 1 });

    const undisturbed = await json(postLoad(t, file, specText('covid.yaml', { target: 'covid_a' }), { chunkRecords: '500' }));
    expect((await settled(t, undisturbed.id)).status).toBe('published');

    // 78 chunks of 200 records, one at a time: the kill lands mid-load.
    const res = await postLoad(t, file, specText('covid.yaml', { target: 'covid_b' }), { chunkRecords: '200' });
    const { id } = await json(res);
    // Children start while the manager still lists chunks: the kill waits for the whole plan to be
    // dispatched (the duplicate deliveries below read chunk 60's row).
    await threeLoaded(t, id);
    first!.kill('SIGKILL');
    await first!.exited;
    const loadedAtKill = (await t.pool.query('SELECT count(*)::int AS n FROM etl_chunk WHERE load_id = $1 AND loaded_at IS NOT NULL', [id])).rows[0].n;
    expect(loadedAtKill).toBeLessThan(78);

    // Duplicate deliveries, twice at once: of chunks already loaded and of one not loaded yet.
    const load = await loadContext(t.pool, id);
    const storage = t.rt.ctx.services.storage;
    for (const n of [1, 2, 60]) {
      const item = await chunk(t, id, n);
      await Promise.all([loadChunk(t.pool, storage, load, item, { round: 1 }), loadChunk(t.pool, storage, load, item, { round: 1 })]);
    }
    await t.workers(1);
    const disturbed = await settled(t, id);
    expect(disturbed.status, disturbed.error ?? '').toBe('published');
    expect(await publishedRows(t, 'covid_b')).toBe(await publishedRows(t, 'covid_a'));
    const a = (await settled(t, undisturbed.id)).manifest!;
    for (const k of ['rowsIn', 'clean', 'rejected', 'problems', 'duplicates', 'duplicateGroups', 'rows', 'published']) expect(disturbed.manifest![k], k).toBe(a[k]);
    const runs = await t.pool.query('SELECT chunk_no, runs FROM etl_chunk WHERE load_id = $1 AND runs > 1 ORDER BY chunk_no', [id]);
    expect(runs.rows.map((r) => r.chunk_no)).toEqual(expect.arrayContaining([1, 2, 60]));

    // A late duplicate after the load was published writes nothing (staging is gone, the checks stand).
    const late = await loadChunk(t.pool, storage, load, await chunk(t, id, 5), { round: 1 });
    expect(late.skipped).toBe(true);
    expect(await publishedRows(t, 'covid_b')).toBe(await publishedRows(t, 'covid_a'));
  });

  it('a load failed by its failed chunks goes on when they are retried: the retry publishes it, identical to an undisturbed load', async () => {
    await using t = await etlTest();
    await t.api();
    const file = fileOf(dataPath('medicaldata/covid_testing_deid.csv.gz'));
    await t.workers(1, { FANOUT_WORKER_CONCURRENCY: 1 });
    const undisturbed = await json(postLoad(t, file, specText('covid.yaml', { target: 'covid_a' }), { chunkRecords: '500' }));
    expect((await settled(t, undisturbed.id)).status).toBe('published');

    // 78 chunks of 200 records, one at a time; once a few are in, the source is gone (the shared
    // disk away): every chunk after fails, and the fan-in fails the load.
    const { id } = await json(postLoad(t, file, specText('covid.yaml', { target: 'covid_b' }), { chunkRecords: '200' }));
    await threeLoaded(t, id);
    const path = await sourcePath(t, id);
    renameSync(path, `${path}.away`);
    const failed = await settled(t, id, 120_000);
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatch(/^\d+ of 78 chunks failed; nothing was published \(retry the failed chunks to go on\)$/);
    const task = await json(t.call('GET', `/tasks/${id}`));
    expect(task).toMatchObject({ status: 'completed', total: 78, round: 1 });
    expect(task.failed).toBe(Number(failed.error!.split(' ')[0]));

    // The disk is back: a retry of the failed chunks opens the load again, and its fan-in checks
    // and publishes it.
    renameSync(`${path}.away`, path);
    const retry = await t.call('POST', `/tasks/${id}/retry-failed`, { body: {} });
    expect(retry.status, await retry.clone().text()).toBe(202);
    await waitFor(
      async () => {
        const again = await json(t.call('GET', `/tasks/${id}`));
        return again.round === 2 && again.completedAt !== null ? again : null;
      },
      { timeoutMs: 120_000, message: 'the retried round ended' },
    );
    const mended = await settled(t, id);
    expect(mended.status, mended.error ?? '').toBe('published');
    expect(await publishedRows(t, 'covid_b')).toBe(await publishedRows(t, 'covid_a'));
    const a = (await settled(t, undisturbed.id)).manifest!;
    for (const k of ['rowsIn', 'clean', 'rejected', 'problems', 'duplicates', 'duplicateGroups', 'rows', 'published']) expect(mended.manifest![k], k).toBe(a[k]);
    expect((await t.pool.query('SELECT count(*)::int AS n FROM etl_chunk WHERE load_id = $1 AND runs = 0', [id])).rows[0].n).toBe(0);
    expect(await json(t.call('GET', `/tasks/${id}`))).toMatchObject({ status: 'completed', total: 78, succeeded: 78, failed: 0, round: 2 });
  });

  it("a retry's chunks that all load before the earlier round's fan-in fails the load: the retry's fan-in opens it again and publishes", async () => {
    await using t = await etlTest();
    await t.api();
    await t.workers(1, { FANOUT_WORKER_CONCURRENCY: 1 });
    const storage = t.rt.ctx.services.storage;
    const { id } = await json(postLoad(t, fileOf(dataPath('medicaldata/covid_testing_deid.csv.gz')), specText('covid.yaml', { target: 'covid_c' }), { chunkRecords: '200' }));
    await threeLoaded(t, id);
    const path = await sourcePath(t, id);
    renameSync(path, `${path}.away`);
    expect((await settled(t, id, 120_000)).status).toBe('failed');
    renameSync(`${path}.away`, path);
    const task = await json(t.call('GET', `/tasks/${id}`));
    // As the round-1 fan-in found it (a retry is let in while a claimed fan-in still runs): loading.
    await t.pool.query("UPDATE etl_load SET status = 'loading', failed_round = NULL, error = NULL WHERE id = $1", [id]);
    // Every chunk of the retry (round 2) loads meanwhile; none finds the load failed to open it.
    const load = await loadContext(t.pool, id);
    const missing = (await t.pool.query('SELECT chunk_no FROM etl_chunk WHERE load_id = $1 AND loaded_at IS NULL ORDER BY chunk_no', [id])).rows.map((r) => r.chunk_no as number);
    expect(missing.length).toBe(task.failed);
    for (const n of missing) expect((await loadChunk(t.pool, storage, load, await chunk(t, id, n), { round: 2 })).skipped).toBeFalsy();
    // Then the round-1 fan-in writes its failure, and the round-2 fan-in runs.
    await finishLoad(t.pool, { ...task, round: 1 });
    expect((await t.pool.query('SELECT status, failed_round FROM etl_load WHERE id = $1', [id])).rows[0]).toEqual({ status: 'failed', failed_round: 1 });
    await finishLoad(t.pool, { ...task, round: 2, failed: 0, succeeded: task.total });
    const mended = await settled(t, id);
    expect(mended.status, mended.error ?? '').toBe('published');
    expect(mended.manifest).toMatchObject({ chunks: 78, rowsIn: 15_524, clean: 15_518, rejected: 6 });
  });
});
