// `pnpm --filter @fanout/dc-etl bench`: the ETL against a plain COPY of the same file into an
// unlogged table of text columns, in the same run on the same PostgreSQL (this machine is shared
// and noisy: compare ratios, never absolute figures across runs). Files shaped like the COVID
// extract, with the same dirt (NA tokens, impossible ages, negative times, duplicate tests), at
// BENCH_ROWS (default 500,000) and ten times that (BENCH_SCALES, default "1,10").
//
// The ETL runs as the kit runs it: an API process and BENCH_WORKERS worker processes (default 2,
// each running BENCH_CONCURRENCY chunks at a time, default 1), the file POSTed to /loads. What is
// measured, per scale (JSON lines on stdout, one per measurement):
// - "plain COPY": COPY of the raw file into an unlogged table, before and after the ETL; the
//   ETL's ratios use the mean of the two (the load on the machine drifts).
// - "ETL": upload (streamed to storage with its SHA-256), clean and load (the load's task: the
//   manager's scan and plan, then every chunk parsed, cleaned and COPYed into staging with its
//   rejects: from the task's creation to its completion, on the database's clock), the fan-in
//   (from the task's completion until the load is published: the checks, dedupe, profile and
//   the publish, a logged copy of the clean rows; the manifest's timings say which took what),
//   and end to end (from the upload's first byte to the published table).
//   cleanLoadRatio = copy seconds / clean-and-load seconds (the issue's throughput ratio: same
//   rows, so the ratio of rows per second); endToEndRatio the same for end to end.
// - CPU: the seconds the worker processes and PostgreSQL spent on the clean and load, and
//   PostgreSQL on the plain COPY (what two cores can give at best, whatever else runs).
// - worker memory: peak RSS of each worker process, sampled every 100 ms during the load.
// - "scaling" (with scales 1 and 10): how much longer the 10x file took, for COPY, clean and
//   load, and end to end, and the peak worker RSS at each size.
import { createReadStream, createWriteStream, mkdtempSync, openAsBlob, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { gunzipSync } from 'node:zlib';
import { appTest, TEST_TOKEN } from '@fanout/kit/testing';
import { waitFor } from '@fanout/testdb';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import app from '../src/app.ts';

const baseRows = Number(process.env.BENCH_ROWS ?? 500_000);
const scales = (process.env.BENCH_SCALES ?? '1,10').split(',').map(Number);
const workerCount = Number(process.env.BENCH_WORKERS ?? 2);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 1);
// The app's default (ETL_CHUNK_RECORDS) unless told otherwise.
const chunkRecords = Number(process.env.BENCH_CHUNK_RECORDS ?? 50_000);
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

/** Each live process's CPU ticks (user + system) by pid, with its command and parent. */
function processTicks(): Map<number, { comm: string; parent: number; ticks: number }> {
  const found = new Map<number, { comm: string; parent: number; ticks: number }>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const fields = stat.slice(close + 2).split(' ');
      found.set(Number(name), { comm: stat.slice(stat.indexOf('(') + 1, close), parent: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) });
    } catch {
      // the process ended while the list was read
    }
  }
  return found;
}

/** A process's CPU ticks (user + system), or null once it has ended. */
function ticksOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return null;
  }
}

/** The children of a process (every PostgreSQL backend is a child of its postmaster). */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * The CPU seconds the worker processes and PostgreSQL (the server this process started, its
 * backends) use from `start` to `stop`, sampled every 100 ms (a backend that ends counts up to
 * its last sample). What the load costs on each side says what two cores can give at best,
 * whatever else runs on the machine. The machine's whole process list is read once, to find
 * the postmaster; each sample then reads the workers, the postmaster and its children only
 * (reading every process on a shared machine ten times a second took CPU from what is measured).
 */
class CpuMeter {
  readonly #first = new Map<number, number>();
  readonly #last = new Map<number, { kind: 'workers' | 'postgres'; ticks: number }>();
  readonly #workers: readonly number[];
  #postmasters: number[] = [];
  #timer: NodeJS.Timeout | undefined;

  constructor(workerPids: readonly number[]) {
    this.#workers = workerPids;
  }

  #findPostmasters(): void {
    const all = processTicks();
    const mine = (pid: number) => {
      for (let p = all.get(pid)?.parent; p !== undefined && p > 1; p = all.get(p)?.parent) if (p === process.pid) return true;
      return false;
    };
    this.#postmasters = [...all].filter(([pid, t]) => t.comm === 'postgres' && all.get(t.parent)?.comm !== 'postgres' && mine(pid)).map(([pid]) => pid);
  }

  #sample(initial: boolean): void {
    const pids: [number, 'workers' | 'postgres'][] = this.#workers.map((pid) => [pid, 'workers']);
    for (const pm of this.#postmasters) pids.push([pm, 'postgres'], ...childrenOf(pm).map((pid): [number, 'postgres'] => [pid, 'postgres']));
    for (const [pid, kind] of pids) {
      const ticks = ticksOf(pid);
      if (ticks === null) continue;
      if (initial) this.#first.set(pid, ticks);
      this.#last.set(pid, { kind, ticks });
    }
  }

  start(): this {
    this.#findPostmasters();
    this.#sample(true);
    this.#timer = setInterval(() => this.#sample(false), 100);
    return this;
  }

  stop(): { workers: number; postgres: number } {
    clearInterval(this.#timer);
    this.#sample(false);
    const used = { workers: 0, postgres: 0 };
    // A backend that started after `start` counts from zero.
    for (const [pid, last] of this.#last) used[last.kind] += (last.ticks - (this.#first.get(pid) ?? 0)) / 100;
    return used;
  }
}

/** Seconds for a plain COPY of the file into a fresh unlogged table of text columns. */
async function plainCopy(pool: pg.Pool, file: string): Promise<number> {
  const client = await pool.connect();
  try {
    await client.query(`DROP TABLE IF EXISTS bench_plain; CREATE UNLOGGED TABLE bench_plain (${header!.split(',').map((h) => `"${h}" text`).join(', ')})`);
    const start = performance.now();
    await pipeline(createReadStream(file, { highWaterMark: 1 << 20 }), client.query(copyFrom('COPY bench_plain FROM STDIN WITH (FORMAT csv, HEADER true)')));
    const seconds = (performance.now() - start) / 1000;
    await client.query('DROP TABLE bench_plain');
    return seconds;
  } finally {
    client.release();
  }
}

const dir = mkdtempSync(join(tmpdir(), 'etl-bench-'));
const spec = readFileSync(new URL('../data/specs/covid.yaml', import.meta.url), 'utf8').replace('maxRejectRate: 0.01', 'maxRejectRate: 0.05');
// The fan-out runtime's own defaults for its leases and polling, not the test settings (made for
// quick recoveries in tests: they poll the database several times as often, which on two cores
// takes CPU from the load being measured).
const runtimeDefaults = { FANOUT_LEASE_MS: 15_000, FANOUT_MAINTENANCE_MS: 5_000, FANOUT_ANNOUNCE_GRACE_MS: 30_000, FANOUT_CONTROL_POLL_MS: 1_000, FANOUT_SUPERVISE_SECONDS: 15 };
const t = await appTest(app, { env: { ...runtimeDefaults, ETL_STORAGE_DIR: join(dir, 'storage'), FANOUT_WORKER_CONCURRENCY: concurrency, FANOUT_LOG_LEVEL: 'warn' } });
try {
  await t.api();
  const workers = await t.workers(workerCount);
  const pool = t.rt.ctx.services.pool;
  const results: Record<number, { copySeconds: number; cleanLoadSeconds: number; endToEndSeconds: number; peakRssMb: number[] }> = {};
  for (const scale of scales) {
    const rows = baseRows * scale;
    const file = join(dir, `covid-${rows}.csv`);
    await generate(file, rows);
    const bytes = statSync(file).size;

    const workerPids = workers.map((w) => w.pid);
    const copyCpu = new CpuMeter(workerPids).start();
    const copyBefore = await plainCopy(pool, file);
    const copyPgCpu = copyCpu.stop().postgres;
    print({ scenario: 'plain COPY into an unlogged table', when: 'before the ETL', rows, bytes, seconds: round(copyBefore), rowsPerSec: Math.round(rows / copyBefore), postgresCpuSeconds: round(copyPgCpu) });

    // The ETL: upload, the task (plan + chunks), the fan-in, sampled for worker memory throughout.
    const peak = new Map(workers.map((w) => [w.pid, 0]));
    const sample = () => {
      for (const w of workers) peak.set(w.pid, Math.max(peak.get(w.pid)!, rssMb(w.pid)));
    };
    const sampler = setInterval(sample, 100);
    const started = Date.now();
    // The workers are idle during the upload (the API process takes it).
    const loadCpuMeter = new CpuMeter(workerPids).start();
    const form = new FormData();
    form.set('spec', spec.replace('target: covid_tests', `target: covid_${scale}`));
    form.set('chunkRecords', String(chunkRecords));
    form.set('file', await openAsBlob(file), `covid-${rows}.csv`);
    const res = await fetch(`${t.apiUrl}/api/etl/loads`, { method: 'POST', headers: { authorization: `Bearer ${TEST_TOKEN.a}` }, body: form });
    if (res.status !== 202) throw new Error(`POST /loads: ${res.status} ${await res.text()}`);
    const { id } = (await res.json()) as { id: string };
    // The CPU of the clean and load (the task from its creation to its last chunk), read as soon
    // as the task completes (the upload's CPU before, the fan-in's after, are not in it). Polled
    // every 200 ms: the times come from the database's clock, and polling every 50 ms took
    // PostgreSQL CPU from the load it measures.
    const loadCpu = await waitFor(
      async () => {
        const task = await t.rt.fanout.getTask(id);
        if (!task?.completedAt) return null;
        return loadCpuMeter.stop();
      },
      { timeoutMs: 3_600_000, intervalMs: 200, message: 'the task completed' },
    );
    const load = await waitFor(
      async () => {
        const { rows: r } = await pool.query('SELECT status, manifest, error FROM etl_load WHERE id = $1', [id]);
        return r[0] && r[0].status !== 'loading' ? r[0] : null;
      },
      { timeoutMs: 3_600_000, intervalMs: 50, message: 'the load ended' },
    );
    const ended = Date.now();
    clearInterval(sampler);
    sample();
    if (load.status !== 'published') throw new Error(`the load ended ${load.status}: ${load.error}`);
    const task = (await t.rt.fanout.getTask(id))!;
    const uploadSeconds = (task.createdAt.getTime() - started) / 1000;
    const cleanLoadSeconds = (task.completedAt!.getTime() - task.createdAt.getTime()) / 1000;
    const fanInSeconds = (ended - task.completedAt!.getTime()) / 1000;
    const endToEndSeconds = (ended - started) / 1000;
    const peakRssMb = [...peak.values()].map((v) => round(v, 1));
    // Where the clean-and-load time went: the manager's plan (creation to the last chunk listed),
    // the chunks (first start to last finish, and the busy time of all of them), and the chunks'
    // own split of their time (reading, cleaning and encoding, the rest waiting on COPY).
    const timeline = (
      await pool.query<{ manager_start: number; plan: number; first_start: number; last_finish: number; busy: number; read_ms: number; encode_ms: number; total_ms: number }>(
        `SELECT extract(epoch FROM t.started_at - t.created_at)::float8 AS manager_start,
                extract(epoch FROM t.dispatched_at - t.created_at)::float8 AS plan,
                extract(epoch FROM min(i.started_at) - t.created_at)::float8 AS first_start,
                extract(epoch FROM max(i.finished_at) - t.created_at)::float8 AS last_finish,
                extract(epoch FROM sum(i.finished_at - i.started_at))::float8 AS busy,
                (SELECT sum((substring(message FROM '\\((\\d+) ms reading'))::int) FROM fanout_item_log WHERE task_id = t.id)::float8 AS read_ms,
                (SELECT sum((substring(message FROM '(\\d+) cleaning and encoding'))::int) FROM fanout_item_log WHERE task_id = t.id)::float8 AS encode_ms,
                (SELECT sum((substring(message FROM 'blank in (\\d+) ms'))::int) FROM fanout_item_log WHERE task_id = t.id)::float8 AS total_ms
           FROM fanout_task t JOIN fanout_item i ON i.task_id = t.id WHERE t.id = $1 GROUP BY t.id`,
        [id],
      )
    ).rows[0]!;

    const copyAfter = await plainCopy(pool, file);
    print({ scenario: 'plain COPY into an unlogged table', when: 'after the ETL', rows, bytes, seconds: round(copyAfter), rowsPerSec: Math.round(rows / copyAfter) });
    const copySeconds = (copyBefore + copyAfter) / 2;
    results[scale] = { copySeconds, cleanLoadSeconds, endToEndSeconds, peakRssMb };
    const m = load.manifest;
    print({
      scenario: 'ETL',
      rows,
      bytes,
      chunks: task.total,
      workers: workerCount,
      concurrency,
      uploadSeconds: round(uploadSeconds),
      cleanLoadSeconds: round(cleanLoadSeconds),
      cleanLoadRowsPerSec: Math.round(rows / cleanLoadSeconds),
      managerStartSeconds: round(timeline.manager_start),
      planSeconds: round(timeline.plan),
      firstChunkStartSeconds: round(timeline.first_start),
      lastChunkFinishSeconds: round(timeline.last_finish),
      chunkBusySeconds: round(timeline.busy),
      chunkReadSeconds: round(timeline.read_ms / 1000),
      chunkEncodeSeconds: round(timeline.encode_ms / 1000),
      chunkCopyWaitSeconds: round((timeline.total_ms - timeline.read_ms - timeline.encode_ms) / 1000),
      fanInSeconds: round(fanInSeconds),
      fanInTimingsMs: m.timings,
      endToEndSeconds: round(endToEndSeconds),
      copySeconds: round(copySeconds),
      cleanLoadRatio: round(copySeconds / cleanLoadSeconds),
      cleanLoadCpuSeconds: { workers: round(loadCpu.workers), postgres: round(loadCpu.postgres) },
      copyPostgresCpuSeconds: round(copyPgCpu),
      endToEndRatio: round(copySeconds / endToEndSeconds),
      published: m.published,
      rejected: m.rejected,
      duplicates: m.duplicates,
      peakRssMb,
    });
    await t.call('POST', `/loads/${id}/discard`);
    rmSync(file, { force: true });
  }
  if (results[1] && results[10]) {
    const [one, ten] = [results[1], results[10]];
    print({
      scenario: 'scaling',
      copyTimeRatio10x: round(ten.copySeconds / one.copySeconds),
      cleanLoadTimeRatio10x: round(ten.cleanLoadSeconds / one.cleanLoadSeconds),
      endToEndTimeRatio10x: round(ten.endToEndSeconds / one.endToEndSeconds),
      peakRssMb1x: Math.max(...one.peakRssMb),
      peakRssMb10x: Math.max(...ten.peakRssMb),
    });
  }
} finally {
  await t[Symbol.asyncDispose]();
  rmSync(dir, { recursive: true, force: true });
}
// The embedded PostgreSQL this process started is stopped when the process exits; its handles
// would keep the process waiting for nothing.
process.exit(0);
