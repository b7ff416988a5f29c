// `pnpm --filter @fanout/iit-qc bench`: a full QC run of the CDISC pilot (306 subjects, about
// 100,000 records, the shipped rule set) on two worker processes, against the same rules evaluated
// by a plain loop in one process, in the same run; then a synthetic study ten times larger
// (subjects copied with new ids) on the same two workers. Both sides are warmed up first (a run
// not measured). Prints one JSON line per scenario, then a summary: the fan-out over the plain
// loop (target >= 1), the 10x time over the 1x time (target <= 11), the workers' peak RSS
// (VmHWM, reset before each run) and what they retain after a run (heap after a full garbage
// collection), at 1x and 10x, with their ratios.
//
// The workers run as the app's worker script runs them, with V8's old generation capped at 256 MB
// (BENCH_WORKER_HEAP_MB; 0 for V8's default, sized from the machine's memory). Other variables:
// BENCH_TIMES (10), BENCH_SKIP_PILOT (only the large study), BENCH_SKIP_BIG (only the pilot),
// BENCH_PILOT_PAIRS (1: more pairs of pilot runs, plain loop then fan-out, and their median ratio),
// BENCH_PLAIN_BIG (the plain loop on it too), BENCH_PHASES (the plain loop's phases and the fan-in's slowest statements),
// BENCH_EXPLAIN (the subject load's plan), BENCH_SLOW_MS (the workers' slow statements),
// BENCH_MEMORY_LOG=<dir> (the workers' memory samples), BENCH_CPU_PROF=<dir> (V8 CPU profiles:
// the workers', written when they stop, and the measured plain loop's), BENCH_HEAP_PROFILE=<file> (what the
// workers promote to V8's old generation, by allocation site), IIT_SUBJECTS_IN_MEMORY. The CPU
// seconds of each run are the workers' (or the plain loop's process) and the PostgreSQL server's.
import { randomUUID, createHash } from 'node:crypto';
import { chmodSync, copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { appMigrations, loadEnv, openApp } from '@fanout/kit';
import { applyMigrations, startPostgres, startProcess, withDatabase, waitFor, type PodProcess } from '@fanout/testdb';
import pg from 'pg';
import app from '../src/app.ts';
import { importUpload, type Study } from '../src/data/import.ts';
import { evaluateSubject } from '../src/rules/engine.ts';
import { storeRuleSet } from '../src/routes/rule-sets.ts';
import { finishRun } from '../src/run/finish.ts';
import { loadSubject, runContext, runSubjects, saveSubject, snapshotRun } from '../src/run/run-store.ts';

const DATA = fileURLToPath(new URL('../data/cdiscpilot01-sdtm/', import.meta.url));
const RULES = readFileSync(fileURLToPath(new URL('../rules/cdiscpilot01.yaml', import.meta.url)), 'utf8');
const ENTRY = fileURLToPath(new URL('../../../packages/kit/src/process/entry.ts', import.meta.url));
const PROBE = fileURLToPath(new URL('./worker-probe.ts', import.meta.url));
const TENANT = 'bench';
const TOKENS = 'bench-token-not-secret:bench';

const dir = mkdtempSync(join(tmpdir(), 'iit-bench-'));
chmodSync(dir, 0o711);
const server = process.env.DATABASE_URL ? null : await startPostgres({ dataDir: join(dir, 'pg') });
const serverUrl = process.env.DATABASE_URL ?? server!.url;
const admin = new pg.Client({ connectionString: serverUrl });
await admin.connect();
await admin.query('DROP DATABASE IF EXISTS iit_bench WITH (FORCE)');
await admin.query('CREATE DATABASE iit_bench');
await admin.end();
const url = withDatabase(serverUrl, 'iit_bench');
await applyMigrations(url, appMigrations(app));
const pool = new pg.Pool({ connectionString: url, max: 8 });
const dirs = { uploadDir: join(dir, 'incoming'), storageDir: join(dir, 'files') };

async function newStudy(name: string): Promise<Study> {
  const { rows } = await pool.query<Study>("INSERT INTO qc_study (id, tenant, name, standard) VALUES (gen_random_uuid(), $1, $2, 'sdtm') RETURNING id, tenant, name, standard", [TENANT, name]);
  return rows[0]!;
}

async function loadPilot(study: Study) {
  for (const f of ['define.xml', ...readdirSync(DATA).filter((f) => /\.xpt(\.gz)?$/.test(f))]) {
    const copy = join(dir, randomUUID());
    copyFileSync(join(DATA, f), copy);
    await importUpload(pool, study, { path: copy, filename: f, mimeType: '', bytes: statSync(copy).size, sha256: createHash('sha256').update(readFileSync(copy)).digest('hex') }, dirs);
  }
}

/**
 * A study `times` as large: every subject's records copied with new subject ids of the same length
 * (01-701-1015 becomes 02-701-1015...: the pilot's ids all start 01), trial design once. The copies
 * are written one after the other, in record order, as an upload of the larger files would write
 * them: interleaved, each subject's records would sit on ten times as many pages.
 */
async function scaledCopy(from: Study, times: number): Promise<Study> {
  const study = await newStudy(`pilot x${times}`);
  const { rows } = await pool.query('SELECT * FROM qc_dataset WHERE study_id = $1 AND current', [from.id]);
  for (const d of rows) {
    const { rows: ins } = await pool.query(
      'INSERT INTO qc_dataset (id, study_id, name, domain, format, filename, sha256, bytes, records, columns, metadata, version, current) SELECT gen_random_uuid(), $2, name, domain, format, filename, sha256, bytes, records, columns, metadata, 1, true FROM qc_dataset WHERE id = $1 RETURNING id',
      [d.id, study.id],
    );
    const copies = d.records > 0 && (await pool.query('SELECT 1 FROM qc_record WHERE dataset_id = $1 AND subject IS NOT NULL LIMIT 1', [d.id])).rowCount ? times : 1;
    await pool.query(
      `INSERT INTO qc_record (dataset_id, recno, subject, data)
       SELECT $2, r.recno + (k - 1) * $3, CASE WHEN k = 1 THEN r.subject ELSE lpad(k::text, 2, '0') || substr(r.subject, 3) END,
              CASE WHEN k = 1 OR r.subject IS NULL THEN r.data ELSE jsonb_set(r.data, '{USUBJID}', to_jsonb(lpad(k::text, 2, '0') || substr(r.subject, 3))) END
       FROM qc_record r, generate_series(1, $4::int) k WHERE r.dataset_id = $1
       ORDER BY k, r.recno`,
      [d.id, ins[0]!.id, d.records, copies],
    );
    await pool.query('UPDATE qc_dataset SET records = (SELECT count(*) FROM qc_record WHERE dataset_id = $1) WHERE id = $1', [ins[0]!.id]);
  }
  await pool.query('ANALYZE qc_record');
  return study;
}

/** Peak resident memory of a process (MB), from /proc. */
const peakMb = (pid: number) => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

const MB = 1024 * 1024;

/** The machine's load average over the last minute: other work on it skews a comparison. */
const load1 = () => Number(loadavg()[0]!.toFixed(1));

/** CPU time a process has used so far (user + system, seconds), from /proc (100 ticks a second). */
const cpuSeconds = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
};

/**
 * CPU time the PostgreSQL server has used so far (seconds): its postmaster and every process it
 * started, running (backends, parallel workers) or ended (reaped into the postmaster's children's
 * times). Null when the server is not a process of this machine (DATABASE_URL elsewhere).
 */
async function postgresCpu(): Promise<() => number | null> {
  const backend = (await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  const statOf = (pid: number | string) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  let postmaster: number;
  try {
    postmaster = Number(statOf(backend)[1]);
  } catch {
    return () => null;
  }
  return () => {
    const own = statOf(postmaster);
    let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry) || Number(entry) === postmaster) continue;
      try {
        const stat = statOf(entry);
        if (Number(stat[1]) === postmaster) ticks += Number(stat[11]) + Number(stat[12]);
      } catch {
        // ended meanwhile: its time is in the postmaster's children's times
      }
    }
    return ticks / 100;
  };
}
const pgCpu = await postgresCpu();
const pgSecondsSince = (before: number | null) => {
  const now = pgCpu();
  return now === null || before === null ? null : Number((now - before).toFixed(1));
};

/**
 * A worker's memory by phase of the run, from its probe's lines: the largest RSS and V8 heap seen
 * while the children ran (the manager's listing included) and during the fan-in, the largest heap
 * right after a full garbage collection (`live`: what the process kept), and what it held before.
 */
function memoryByPhase(lines: readonly string[], started: number, fanInAt: number, ended: number) {
  const blank = () => ({ rss: 0, heap: 0, live: 0 });
  const phase = { idle: blank(), children: blank(), fanIn: blank() };
  for (const line of lines) {
    const [kind, ...fields] = line.split(' ');
    if (kind !== 'MEM' && kind !== 'GC') continue;
    const [at, a, b] = fields.map(Number) as [number, number, number];
    if (at > ended) continue;
    const p = at < started ? phase.idle : at < fanInAt ? phase.children : phase.fanIn;
    if (kind === 'GC') p.live = Math.max(p.live, a);
    else if (at < started) Object.assign(p, { rss: a, heap: b });
    else Object.assign(p, { rss: Math.max(p.rss, a), heap: Math.max(p.heap, b) });
  }
  const mb = (o: Record<string, number>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, Math.round(v / MB)]));
  return { idle: mb(phase.idle), children: mb(phase.children), fanIn: mb(phase.fanIn) };
}

/** The old generation's cap of the worker processes (MB; 0: V8's default), as the worker script runs them. */
const WORKER_HEAP_MB = Number(process.env.BENCH_WORKER_HEAP_MB ?? 256);

/**
 * The API runtime of this process (it submits) and two worker processes, started once for every
 * fan-out run of the bench, so a measured run finds them warm, as the plain loop is.
 */
async function startFleet() {
  const env = loadEnv(app.env!, { ...process.env, DATABASE_URL: url, FANOUT_TOKENS: TOKENS, FANOUT_DATA_DIR: dir } as Record<string, string>);
  const rt = await openApp(app, { env, role: 'api', databaseUrl: url });
  await rt.fanout.start({ managers: false, children: false, maintenance: false, presence: false });
  const nodeOptions = [
    process.env.NODE_OPTIONS ?? '',
    WORKER_HEAP_MB > 0 ? `--max-old-space-size=${WORKER_HEAP_MB}` : '',
    `--import=${PROBE}`,
    process.env.BENCH_CPU_PROF ? `--cpu-prof --cpu-prof-dir=${process.env.BENCH_CPU_PROF}` : '',
  ]
    .filter(Boolean)
    .join(' ');
  const workers: PodProcess[] = await Promise.all(
    [1, 2].map(() => startProcess(ENTRY, 'READY', url, { FANOUT_ROLE: 'worker', FANOUT_APP_MODULE: app.module, FANOUT_TOKENS: TOKENS, FANOUT_DATA_DIR: dir, FANOUT_LOG_LEVEL: 'warn', NODE_OPTIONS: nodeOptions })),
  );
  return {
    run: (studyId: string, ruleSetId: string, records: number) => fanoutRun(() => rt.fanout.submit(rt.ctx.services.definition, { studyId, ruleSetId }, { tenant: TENANT }), workers, studyId, records),
    async close() {
      await Promise.all(workers.map((w) => w.stop()));
      await rt.close({ graceMs: 1000 });
    },
  };
}

/** The workers' heap after a full garbage collection the probe runs on SIGUSR2 (MB): what they keep. */
async function retainedMb(workers: readonly PodProcess[]): Promise<number[]> {
  const seen = workers.map((w) => w.lines.length);
  for (const w of workers) w.kill('SIGUSR2');
  const lines = await waitFor(
    () => {
      const found = workers.map((w, i) => w.lines.slice(seen[i]).find((l) => l.startsWith('RETAINED ')));
      return found.every(Boolean) ? (found as string[]) : undefined;
    },
    { timeoutMs: 30_000, message: 'RETAINED from every worker' },
  );
  return lines.map((l) => Math.round(Number(l.split(' ')[2]) / MB));
}

async function fanoutRun(submit: () => Promise<{ id: string }>, workers: readonly PodProcess[], studyId: string, records: number) {
  // The peak RSS (VmHWM) from here on: writing 5 to clear_refs resets it.
  for (const w of workers) writeFileSync(`/proc/${w.pid}/clear_refs`, '5');
  const cpuBefore = workers.map((w) => cpuSeconds(w.pid));
  const pgBefore = pgCpu();
  const loadBefore = load1();
  const started = performance.now();
  const startedAt = Date.now();
  const task = await submit();
  const stages: Record<string, number> = {};
  await waitFor(
    async () => {
      const stage = (await pool.query('SELECT stage FROM qc_run WHERE task_id = $1', [task.id])).rows[0]?.stage as string | undefined;
      if (stage) stages[stage] ??= Math.round(performance.now() - started) / 1000;
      return stage === 'done';
    },
    { timeoutMs: 1_800_000, intervalMs: 50 },
  );
  const seconds = (performance.now() - started) / 1000;
  const endedAt = Date.now();
  const workerCpuSeconds = workers.map((w, i) => Number((cpuSeconds(w.pid) - cpuBefore[i]!).toFixed(1)));
  const postgresCpuSeconds = pgSecondsSince(pgBefore);
  const workerPeakMb = workers.map((w) => Math.round(peakMb(w.pid)));
  // When the last child settled (the task completed) and the fan-in ended.
  const times = (await pool.query('SELECT extract(epoch FROM (t.completed_at - t.created_at))::float8 AS children, extract(epoch FROM t.completed_at)::float8 * 1000 AS completed_ms FROM fanout_task t JOIN qc_run r ON r.task_id = t.id WHERE t.id = $1', [task.id])).rows[0];
  stages.children = Number(times.children.toFixed(2));
  // The fan-in's finished_at is its transaction's start: it ended when 'done' was seen.
  stages.fanIn = Number(((endedAt - times.completed_ms) / 1000).toFixed(2));
  const findings = Number((await pool.query('SELECT count(*) FROM qc_finding WHERE run_id = $1', [task.id])).rows[0].count);
  const top = (await pool.query('SELECT rule_id, count(*)::int AS n FROM qc_finding WHERE run_id = $1 GROUP BY 1 ORDER BY 2 DESC LIMIT 5', [task.id])).rows.map((r) => `${r.rule_id}=${r.n}`);
  // The fan-in's 'finishing' stage is inside its transaction, never seen from here: it starts when the task completed.
  const memory = workers.map((w) => memoryByPhase(w.lines, startedAt, times.completed_ms, endedAt));
  if (process.env.BENCH_SLOW_MS) {
    // Slow statements of the workers, at their time relative to the task's completion (the fan-in starts at 0).
    for (const w of workers) {
      for (const line of w.lines.filter((l) => l.startsWith('SLOW ') && Number(l.split(' ')[1]) >= startedAt)) {
        const [, at, ms, ...text] = line.split(' ');
        console.log(`${((Number(at) - times.completed_ms) / 1000).toFixed(2)}s +${ms}ms ${text.join(' ')}`);
      }
    }
  }
  if (process.env.BENCH_MEMORY_LOG) {
    workers.forEach((w, i) => writeFileSync(join(process.env.BENCH_MEMORY_LOG!, `worker${i + 1}-${studyId}.log`), [`RUN ${startedAt} ${times.completed_ms} ${endedAt}`, ...w.lines.filter((l) => /^(MEM|GC) /.test(l))].join('\n')));
  }
  const workerRetainedMb = await retainedMb(workers);
  return { seconds, stages, findings, top, recordsPerSecond: Math.round(records / seconds), loadAverage: [loadBefore, load1()], workerCpuSeconds, postgresCpuSeconds, workerPeakMb, workerRetainedMb, memory };
}

/**
 * Times every statement pg clients of this process run until `stop()`, which returns the slowest
 * (seconds, the statement's first words): where the fan-in spends its time.
 */
function timeStatements() {
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  const spent = new Map<string, number>();
  proto.query = function (this: unknown, ...args: unknown[]) {
    const text = typeof args[0] === 'string' ? args[0] : String((args[0] as { text?: string })?.text ?? '?');
    const started = performance.now();
    const result = original.apply(this, args);
    if (result instanceof Promise) {
      const key = text.replace(/\s+/g, ' ').slice(0, 90);
      result.then(
        () => spent.set(key, (spent.get(key) ?? 0) + (performance.now() - started) / 1000),
        () => {},
      );
    }
    return result;
  };
  return {
    stop() {
      proto.query = original;
      return [...spent].sort((a, b) => b[1] - a[1]).slice(0, 8).map(([k, v]) => `${v.toFixed(2)}s ${k}`);
    },
  };
}

/** The same rules, a plain loop in this one process: every subject in turn, then the study-level rules. */
async function plainLoop(studyId: string, ruleSetId: string, records: number) {
  const runId = randomUUID();
  const started = performance.now();
  const cpu = process.cpuUsage();
  const pgBefore = pgCpu();
  const loadBefore = load1();
  const run = await snapshotRun(pool, runId, TENANT, { studyId, ruleSetId });
  const ctx = await runContext(pool, runId);
  const phase = { load: 0, evaluate: 0, save: 0, fanIn: 0 };
  let at = performance.now();
  const lap = (k: keyof typeof phase) => {
    const now = performance.now();
    phase[k] += (now - at) / 1000;
    at = now;
  };
  for await (const page of runSubjects(pool, run)) {
    at = performance.now();
    for (const s of page) {
      const data = await loadSubject(pool, ctx, s.subject, s.site);
      lap('load');
      const { findings, tallies } = evaluateSubject(ctx.childRules, data, ctx.trial);
      lap('evaluate');
      await saveSubject(pool, runId, 1, s.subject, findings, tallies);
      lap('save');
    }
  }
  at = performance.now();
  const statements = process.env.BENCH_PHASES ? timeStatements() : null;
  await finishRun(pool, { id: runId, round: 1, status: 'completed', failed: 0, cancelled: 0 });
  lap('fanIn');
  if (statements) console.log(JSON.stringify({ fanInStatements: statements.stop() }));
  if (process.env.BENCH_PHASES) console.log(JSON.stringify(phase));
  const seconds = (performance.now() - started) / 1000;
  const findings = Number((await pool.query('SELECT count(*) FROM qc_finding WHERE run_id = $1', [runId])).rows[0].count);
  const used = process.cpuUsage(cpu);
  const postgresCpuSeconds = pgSecondsSince(pgBefore);
  return { seconds, findings, recordsPerSecond: Math.round(records / seconds), loadAverage: [loadBefore, load1()], cpuSeconds: Number(((used.user + used.system) / 1e6).toFixed(1)), postgresCpuSeconds };
}

/** With BENCH_CPU_PROF=<dir>: a V8 CPU profile of `work` in this process, written to <dir>/<name>.cpuprofile. */
async function profiled<T>(name: string, work: () => Promise<T>): Promise<T> {
  const dir = process.env.BENCH_CPU_PROF;
  if (!dir) return work();
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    return await work();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
    session.disconnect();
  }
}

const recordsOf = async (studyId: string) => Number((await pool.query("SELECT sum(records) AS n FROM qc_dataset WHERE study_id = $1 AND current AND format NOT IN ('define', 'dictionary')", [studyId])).rows[0].n);

const ratio = (a: number, b: number) => Number((a / b).toFixed(2));

/** Pairs of pilot runs (plain loop, then fan-out) measured; the summary gives their median ratio too. */
const PILOT_PAIRS = Number(process.env.BENCH_PILOT_PAIRS ?? 1);
/** Only the pilot: no larger study. */
const SKIP_BIG = Boolean(process.env.BENCH_SKIP_BIG);

try {
  const pilot = await newStudy('CDISCPILOT01');
  await loadPilot(pilot);
  const pilotRules = (await storeRuleSet(pool, pilot, RULES, TENANT)).id;
  const records = await recordsOf(pilot.id);
  const times = Number(process.env.BENCH_TIMES ?? 10);
  const big = await scaledCopy(pilot, SKIP_BIG ? 1 : times);
  const bigRules = (await storeRuleSet(pool, big, RULES, TENANT)).id;
  const bigRecords = await recordsOf(big.id);
  const bigSubjects = Number((await pool.query("SELECT count(DISTINCT subject)::int AS n FROM qc_record r JOIN qc_dataset d ON d.id = r.dataset_id WHERE d.study_id = $1 AND d.domain = 'DM'", [big.id])).rows[0].n);
  if (process.env.BENCH_EXPLAIN) {
    const ids = (await pool.query('SELECT id FROM qc_dataset WHERE study_id = $1 AND current', [big.id])).rows.map((r) => r.id);
    for (const subject of ['01-701-1015', '02-701-1015']) {
      const plan = await pool.query('EXPLAIN (ANALYZE, BUFFERS) SELECT dataset_id, recno, data FROM qc_record WHERE subject = $1 AND dataset_id = ANY($2::uuid[]) ORDER BY dataset_id, recno', [subject, ids]);
      console.log(subject, plan.rows.map((r) => r['QUERY PLAN']).join('\n'));
    }
  }
  const skipPilot = Boolean(process.env.BENCH_SKIP_PILOT);
  // Warm-up: caches and JIT on both sides, not measured.
  if (!skipPilot) await plainLoop(pilot.id, pilotRules, records);
  const plain = skipPilot ? null : await profiled('plain-loop', () => plainLoop(pilot.id, pilotRules, records));
  const plainBig = process.env.BENCH_PLAIN_BIG ? await plainLoop(big.id, bigRules, bigRecords) : null;
  const fleet = await startFleet();
  try {
    await fleet.run(pilot.id, pilotRules, records);
    const fanout = skipPilot ? null : await fleet.run(pilot.id, pilotRules, records);
    if (plain && fanout) console.log(JSON.stringify({ scenario: 'pilot', subjects: 306, records, plainLoop: plain, fanout, ratio: ratio(plain.seconds, fanout.seconds) }));
    // More pairs (BENCH_PILOT_PAIRS): the plain loop, then the fan-out, each pair run back to back
    // so both see about the same load; the workers stay up, idle, while the loop runs.
    const pairs = plain && fanout ? [{ plain: plain.seconds, fanout: fanout.seconds, ratio: ratio(plain.seconds, fanout.seconds), load: [plain.loadAverage[0], fanout.loadAverage[1]] }] : [];
    for (let i = 1; i < PILOT_PAIRS && pairs.length > 0; i++) {
      const p = await plainLoop(pilot.id, pilotRules, records);
      const f = await fleet.run(pilot.id, pilotRules, records);
      pairs.push({ plain: p.seconds, fanout: f.seconds, ratio: ratio(p.seconds, f.seconds), load: [p.loadAverage[0], f.loadAverage[1]] });
    }
    const medianRatio = pairs.length > 0 ? [...pairs].sort((a, b) => a.ratio - b.ratio)[Math.floor(pairs.length / 2)]!.ratio : null;
    if (pairs.length > 1) console.log(JSON.stringify({ scenario: 'pilot pairs', pairs: pairs.map((p) => ({ ...p, plain: Number(p.plain.toFixed(2)), fanout: Number(p.fanout.toFixed(2)) })), medianRatio }));
    const fanoutBig = SKIP_BIG ? null : await fleet.run(big.id, bigRules, bigRecords);
    if (fanoutBig) console.log(JSON.stringify({ scenario: `pilot x${times}`, subjects: bigSubjects, records: bigRecords, plainLoop: plainBig, fanout: fanoutBig, ...(plainBig ? { ratio: ratio(plainBig.seconds, fanoutBig.seconds) } : {}) }));
    if (fanout && fanoutBig) {
      const peak = (r: typeof fanout) => Math.max(...r.workerPeakMb);
      const retained = (r: typeof fanout) => Math.max(...r.workerRetainedMb);
      console.log(
        JSON.stringify({
          scenario: 'summary',
          machine: { cores: availableParallelism(), loadAverage: loadavg().map((l) => Number(l.toFixed(1))) },
          fanoutOverPlainLoop: { ratio: ratio(plain!.seconds, fanout.seconds), ...(pairs.length > 1 ? { medianOfPairs: medianRatio, pairs: pairs.length } : {}), target: '>= 1' },
          // CPU seconds of the pilot run: the plain loop's process or the two workers, and the PostgreSQL server.
          cpuSeconds: {
            plainLoop: { process: plain!.cpuSeconds, postgres: plain!.postgresCpuSeconds },
            fanout: { workers: Number((fanout.workerCpuSeconds[0]! + fanout.workerCpuSeconds[1]!).toFixed(1)), postgres: fanout.postgresCpuSeconds },
          },
          [`time x${times} over x1`]: { ratio: ratio(fanoutBig.seconds, fanout.seconds), target: `<= ${times + 1}` },
          workerPeakRssMb: { x1: peak(fanout), [`x${times}`]: peak(fanoutBig), ratio: ratio(peak(fanoutBig), peak(fanout)), heapCapMb: WORKER_HEAP_MB || 'V8 default' },
          workerRetainedMb: { x1: retained(fanout), [`x${times}`]: retained(fanoutBig), ratio: ratio(retained(fanoutBig), retained(fanout)) },
        }),
      );
    }
  } finally {
    await fleet.close();
  }
} finally {
  await pool.end();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
}
