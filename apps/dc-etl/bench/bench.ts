// `pnpm --filter @fanout/dc-etl bench`: the ETL's clean-and-load throughput against a plain COPY
// of the same file into an unlogged table, in the same run on the same PostgreSQL (machines are
// noisy: compare ratios). Files shaped like the COVID extract, with the same dirt (NA tokens,
// impossible ages, negative times, duplicate tests), at BENCH_ROWS (default 500,000) and ten
// times that (BENCH_SCALES, default "1,10"). Prints one JSON line per measurement:
//   {"scenario","rows","seconds","rowsPerSec","ratioToCopy", ...}
// The ETL runs as the kit runs it: an API process and worker processes (BENCH_WORKERS, default
// 2), the file POSTed to /loads. "clean and load" is the task (planning and every chunk); the
// fan-in (dedupe, thresholds, profile, publish) is timed apart. Worker memory is the peak RSS
// of each worker process, sampled every 100 ms.
import { createReadStream, createWriteStream, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { openAsBlob } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { gunzipSync } from 'node:zlib';
import { appTest } from '@fanout/kit/testing';
import { waitFor } from '@fanout/testdb';
import { from as copyFrom } from 'pg-copy-streams';
import app from '../src/app.ts';

const baseRows = Number(process.env.BENCH_ROWS ?? 500_000);
const scales = (process.env.BENCH_SCALES ?? '1,10').split(',').map(Number);
const workerCount = Number(process.env.BENCH_WORKERS ?? 2);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 1);
const chunkRecords = Number(process.env.BENCH_CHUNK_RECORDS ?? 25_000);
const print = (line: Record<string, unknown>) => console.log(JSON.stringify(line));
const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;

const covid = gunzipSync(readFileSync(new URL('../data/medicaldata/covid_testing_deid.csv.gz', import.meta.url))).toString('utf8').trimEnd().split('\n');
const [header, ...records] = covid;

/**
 * Writes `rows` records: the extract's records over and over, each copy with its own subject ids
 * (so each copy has the extract's duplicate groups, rejects and NAs, no more).
 */
async function generate(path: string, rows: number): Promise<void> {
  const out = createWriteStream(path);
  const write = async (text: string) => {
    if (!out.write(text)) await once(out, 'drain');
  };
  await write(`${header}\n`);
  let written = 0;
  for (let copy = 0; written < rows; copy++) {
    let block = '';
    for (const record of records) {
      if (written++ >= rows) break;
      const comma = record.indexOf(',');
      block += `${Number(record.slice(0, comma)) + copy * 100_000}${record.slice(comma)}\n`;
      if (block.length > 1 << 20) {
        await write(block);
        block = '';
      }
    }
    await write(block);
  }
  out.end();
  await once(out, 'finish');
}

function rssMb(pid: number): number {
  try {
    const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
    return kb / 1024;
  } catch {
    return 0;
  }
}

const dir = mkdtempSync(join(tmpdir(), 'etl-bench-'));
const spec = readFileSync(new URL('../data/specs/covid.yaml', import.meta.url), 'utf8').replace('maxRejectRate: 0.01', 'maxRejectRate: 0.05');
const t = await appTest(app, { env: { ETL_STORAGE_DIR: join(dir, 'storage'), FANOUT_WORKER_CONCURRENCY: concurrency, FANOUT_LOG_LEVEL: 'warn' } });
try {
  await t.api();
  const workers = await t.workers(workerCount);
  const pool = t.rt.ctx.services.pool;
  const results: Record<number, { seconds: number; copySeconds: number; peakRssMb: number[] }> = {};
  for (const scale of scales) {
    const rows = baseRows * scale;
    const file = join(dir, `covid-${rows}.csv`);
    await generate(file, rows);
    const bytes = statSync(file).size;

    // Plain COPY of the same file into an unlogged table of text columns.
    const client = await pool.connect();
    await client.query(`DROP TABLE IF EXISTS bench_plain; CREATE UNLOGGED TABLE bench_plain (${header!.split(',').map((h) => `"${h}" text`).join(', ')})`);
    const copyStart = performance.now();
    await pipeline(createReadStream(file, { highWaterMark: 1 << 20 }), client.query(copyFrom('COPY bench_plain FROM STDIN WITH (FORMAT csv, HEADER true)')));
    const copySeconds = (performance.now() - copyStart) / 1000;
    await client.query('DROP TABLE bench_plain');
    client.release();
    print({ scenario: 'plain COPY into an unlogged table', rows, bytes, seconds: round(copySeconds), rowsPerSec: Math.round(rows / copySeconds) });

    // The ETL: upload, then the task (plan + chunks), then the fan-in.
    const peak = new Map(workers.map((w) => [w.pid, 0]));
    const sampler = setInterval(() => {
      for (const w of workers) peak.set(w.pid, Math.max(peak.get(w.pid)!, rssMb(w.pid)));
    }, 100);
    const uploadStart = performance.now();
    const form = new FormData();
    form.set('spec', spec.replace('target: covid_tests', `target: covid_${scale}`));
    form.set('chunkRecords', String(chunkRecords));
    form.set('file', await openAsBlob(file), `covid-${rows}.csv`);
    const res = await fetch(`${t.apiUrl}/api/etl/loads`, { method: 'POST', headers: { authorization: 'Bearer token-a' }, body: form });
    if (res.status !== 202) throw new Error(`POST /loads: ${res.status} ${await res.text()}`);
    const { id } = (await res.json()) as { id: string };
    const uploadSeconds = (performance.now() - uploadStart) / 1000;
    const task = await waitFor(
      async () => {
        const task = await t.rt.fanout.getTask(id);
        return task && ['completed', 'failed', 'cancelled'].includes(task.status) ? task : null;
      },
      { timeoutMs: 3_600_000, intervalMs: 50, message: 'the load task ended' } as never,
    );
    const taskEnded = performance.now();
    const load = await waitFor(
      async () => {
        const { rows: r } = await pool.query('SELECT status, manifest, error, published_at FROM etl_load WHERE id = $1', [id]);
        return r[0]?.status === 'loading' ? null : r[0];
      },
      { timeoutMs: 3_600_000, intervalMs: 50, message: 'the load published' } as never,
    );
    // Wall time from the task's end (seen within 50 ms) to the load's end: dedupe, checks, profile, publish.
    const fanInSeconds = (performance.now() - taskEnded) / 1000;
    clearInterval(sampler);
    if (load.status !== 'published') throw new Error(`the load ended ${load.status}: ${load.error}`);
    const seconds = (task.completedAt!.getTime() - task.createdAt.getTime()) / 1000;
    const peakRssMb = [...peak.values()].map((v) => round(v, 1));
    results[scale] = { seconds, copySeconds, peakRssMb };
    print({
      scenario: 'ETL clean and load (plan + chunks)',
      rows,
      chunks: task.total,
      seconds: round(seconds),
      rowsPerSec: Math.round(rows / seconds),
      ratioToCopy: round(copySeconds / seconds),
      uploadSeconds: round(uploadSeconds),
      fanInSeconds: round(fanInSeconds),
      published: load.manifest.published,
      rejected: load.manifest.rejected,
      duplicates: load.manifest.duplicates,
      workers: workerCount,
      concurrency,
      peakRssMb,
    });
    await t.call('POST', `/loads/${id}/discard`);
    rmSync(file, { force: true });
  }
  if (results[1] && results[10]) {
    print({
      scenario: 'scaling',
      timeRatio10x: round(results[10].seconds / results[1].seconds),
      copyTimeRatio10x: round(results[10].copySeconds / results[1].copySeconds),
      peakRssMb1x: Math.max(...results[1].peakRssMb),
      peakRssMb10x: Math.max(...results[10].peakRssMb),
    });
  }
} finally {
  await t[Symbol.asyncDispose]();
  rmSync(dir, { recursive: true, force: true });
}
