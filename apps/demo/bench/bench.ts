// `pnpm bench`: raw pg-boss against Fanout on the same PostgreSQL, in one process tree.
// Prints one JSON line per scenario on stdout:
//   {"scenario","n","seconds","perSec","ratioToRaw","peakRssMb", ...}
// ratioToRaw compares with raw pg-boss measured in the same run, since machines are noisy: at
// each size raw and Fanout run in turns (BENCH_REPEATS times, default 5 up to 20,000 items, else
// 1), and the pair with the median ratio is printed, with every pair's ratio in `ratios`. Next to
// each Fanout run, the stronger baselines: pg-boss run well (`pgboss_raw_wellrun`) and pg-boss's
// own fan-in (`pgboss_flow`), each printed with `fanoutRatio` (Fanout's speed over theirs) and the CPU
// both spent over their timed parts (`cpuSeconds.machine`, `fanoutMachineCpuRatio`).
// Uses DATABASE_URL's server when set, otherwise an embedded PostgreSQL in a temp folder.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { migrationsDir } from '@fanout/prisma-adapter';
import { context, propagation, ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import pg from 'pg';
import { createAppRuntime } from '../src/db.ts';
import { databaseMs, machineCpuSeconds, machineCpuSince } from './clock.ts';
import { noop } from './noop.ts';
import { benchServer, statementTimes } from './server.ts';

// BENCH_SIZES=0 skips raw against Fanout (to run only the telemetry pairs, BENCH_OTEL_SIZE).
const sizes = (process.env.BENCH_SIZES ?? '10000,100000').split(',').map(Number).filter((n) => n > 0);
const repeatsFor = (n: number) => Number(process.env.BENCH_REPEATS ?? (n <= 20_000 ? 5 : 1));
// BENCH_OTEL_WARMUP=k: each process of the telemetry pairs first works a task of k items (both
// arms alike), so the pair compares steady state rather than start-up (code compiled on first use).
const otelWarmup = Number(process.env.BENCH_OTEL_WARMUP ?? 0);
const scenarioPath = fileURLToPath(new URL('./scenario.ts', import.meta.url));
// BENCH_BASELINES: the stronger baselines measured next to each Fanout run ("raw-wellrun,flow" by
// default; "" for none).
const baselines = (process.env.BENCH_BASELINES ?? 'raw-wellrun,flow').split(',').filter((b): b is 'raw-wellrun' | 'flow' => b === 'raw-wellrun' || b === 'flow');

// The bench submits each task in a caller's trace (as an HTTP client sending `traceparent` would):
// this process only propagates it (no SDK here, it is not measured), and the traced scenario
// reports how many item spans ended up in that trace.
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());

/** What a scenario process prints when it ends. */
interface ScenarioResult {
  seconds?: number;
  cpuSeconds: number;
  /** The whole machine's busy CPU seconds over the timed part (the baselines measure it themselves). */
  machineCpuSeconds?: number | null;
  peakRssMb: number;
  liveHeapMb: number;
  spans?: number;
  /** The maintenance loop's steps in this process: passes, total and longest milliseconds. */
  maintenance?: Record<string, { passes: number; totalMs: number; maxMs: number }>;
  spansByName?: Record<string, number>;
  itemSpansInTrace?: number;
}

const server = await benchServer();
const freshDatabase = (name: string) => server.database(name, [migrationsDir]);

function run(args: string[], waitReady = false, env: Record<string, string> = {}) {
  const prof = process.env.BENCH_CPU_PROF && args[0] === 'fanout-children' ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const child = spawn(process.execPath, ['--conditions=dev-source', '--no-warnings', '--expose-gc', ...prof, scenarioPath, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  const ready = new Promise<void>((resolve, reject) => {
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      err += c;
      if (err.includes('READY')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`scenario ${args[0]} exited ${code}: ${err}`)));
  });
  const result = new Promise<ScenarioResult>((resolve, reject) =>
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1)!)) : reject(new Error(`scenario ${args[0]} exited ${code}: ${err}`)))),
  );
  ready.catch(() => {}); // a failed start surfaces through `result`
  return { child, ready: waitReady ? ready : Promise.resolve(), result };
}

const print = (line: Record<string, unknown>) => console.log(JSON.stringify(line));
const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;

/** Raw pg-boss: insert n no-op jobs, work them in batches of 100 with 4 workers. */
async function measureRaw(n: number) {
  const url = await freshDatabase(`bench_raw_${n}`);
  const scenario = run(['raw', url, String(n)]);
  const cpuBefore = machineCpuSeconds();
  const raw = await scenario.result;
  return {
    scenario: 'pgboss_raw',
    n,
    seconds: raw.seconds!,
    perSec: Math.round(n / raw.seconds!),
    ratioToRaw: 1,
    peakRssMb: raw.peakRssMb,
    liveHeapMb: raw.liveHeapMb,
    // The whole machine includes the process's start-up; the worker's own is timed.
    cpuSeconds: { machineWithStartup: machineCpuSince(cpuBefore), worker: raw.cpuSeconds },
  };
}

/**
 * pg-boss run as well as it can be (workers first, jobs inserted in pages while they work, the
 * queue's statistics refreshed, the clock stopped at the database's completion), or pg-boss's own
 * fan-in (`flow()`: one job depending on n children, flow interval 1 s) until the fan-in job ran.
 */
async function measureBaseline(mode: 'raw-wellrun' | 'flow', n: number) {
  const url = await freshDatabase(`bench_${mode.replace('-', '_')}_${n}`);
  const result = await run([mode, url, String(n)]).result;
  return { seconds: result.seconds!, perSec: Math.round(n / result.seconds!), peakRssMb: result.peakRssMb, liveHeapMb: result.liveHeapMb, cpuSeconds: result.cpuSeconds, machineCpuSeconds: result.machineCpuSeconds ?? null };
}

/**
 * Fanout: one task of n no-op items; the manager and the children in their own processes,
 * children with the same batch size and worker count as raw.
 */
async function measureFanout(n: number, otel = false, warmup = 0) {
  const url = await freshDatabase(`bench_fanout_${n}`);
  const statements = statementTimes(url);
  await statements.reset();
  const traceId = randomBytes(16).toString('hex');
  const env = { BENCH_OTEL: otel ? '1' : '0', BENCH_TRACE_ID: traceId };
  const manager = run(['fanout-manager', url], true, env);
  const children = run(['fanout-children', url], true, env);
  await Promise.all([manager.ready, children.ready]);
  const api = createAppRuntime({ databaseUrl: url, definitions: [noop], poolSize: 2 });
  await api.fanout.start({ managers: false, children: false, maintenance: false });
  // The run is timed on the database's clock: from just before the submit to the task's
  // completion as the database stored it (`completed_at`: the statement that settled its last
  // items), as the well-run baseline's end is its last completion. So when the watcher sees the
  // end does not matter, and it looks every 25 ms with one plain connection: a look every 5 ms
  // cost about 0.1 CPU-second of each run (the baselines do not watch while they work).
  const watcher = new pg.Client({ connectionString: url });
  await watcher.connect();
  const completed = async (id: string): Promise<number> => {
    for (;;) {
      const { rows } = await watcher.query<{ status: string; at: string | null }>('SELECT status, extract(epoch FROM completed_at) * 1000 AS at FROM fanout_task WHERE id = $1', [id]);
      if (rows[0]?.status === 'completed') return Number(rows[0].at);
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  if (warmup > 0) await completed((await api.fanout.submit(noop, { n: warmup })).id);
  const cpuBefore = machineCpuSeconds();
  const ownCpuBefore = process.cpuUsage();
  const started = await databaseMs(watcher);
  const caller = trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId: randomBytes(8).toString('hex'), traceFlags: TraceFlags.SAMPLED, isRemote: true });
  const task = await context.with(caller, () => api.fanout.submit(noop, { n }));
  const seconds = ((await completed(task.id)) - started) / 1000;
  const machineCpu = machineCpuSince(cpuBefore);
  const ownCpu = process.cpuUsage(ownCpuBefore);
  // Where the time went, on the database's clock: until a manager took the task, its dispatch,
  // until the first item started, and from the last item's start to the task's completion.
  const { rows: [p] } = await watcher.query<Record<'to_manager' | 'dispatch' | 'to_first' | 'last_to_end', number>>(
    `SELECT extract(epoch FROM t.started_at - t.created_at) * 1000 AS to_manager,
            extract(epoch FROM t.dispatched_at - t.started_at) * 1000 AS dispatch,
            extract(epoch FROM f.first - t.started_at) * 1000 AS to_first,
            extract(epoch FROM t.completed_at - f.last) * 1000 AS last_to_end
     FROM fanout_task t, LATERAL (SELECT min(started_at) AS first, max(started_at) AS last FROM fanout_item WHERE task_id = t.id) f
     WHERE t.id = $1`,
    [task.id],
  );
  const phasesMs = { toManager: Math.round(p!.to_manager), dispatch: Math.round(p!.dispatch), toFirstItem: Math.round(p!.to_first), lastItemToEnd: Math.round(p!.last_to_end) };
  await watcher.end();
  const finished = (await api.fanout.getTask(task.id))!;
  await api.close();
  manager.child.kill('SIGTERM');
  children.child.kill('SIGTERM');
  const [managerStats, childStats] = await Promise.all([manager.result, children.result]);
  if (finished.succeeded !== n || finished.total !== n) throw new Error(`fanout counts are off: ${JSON.stringify(finished)}`);
  return {
    scenario: 'fanout',
    n,
    seconds,
    perSec: Math.round(n / seconds),
    peakRssMb: childStats.peakRssMb,
    managerPeakRssMb: managerStats.peakRssMb,
    managerLiveHeapMb: managerStats.liveHeapMb,
    childrenLiveHeapMb: childStats.liveHeapMb,
    // Busy CPU seconds during the run: the whole machine (mostly PostgreSQL beyond the
    // processes), each Fanout process, and this one (the submit and the watching).
    cpuSeconds: { machine: machineCpu, manager: managerStats.cpuSeconds, children: childStats.cpuSeconds, submitter: round((ownCpu.user + ownCpu.system) / 1e6) },
    phasesMs,
    // The longest pass of each maintenance step in the manager process (the scale target: under 50 ms).
    maintenanceMaxMs: Object.fromEntries(Object.entries(managerStats.maintenance ?? {}).map(([step, s]) => [step, s.maxMs])),
    maintenanceMeanMs: Object.fromEntries(Object.entries(managerStats.maintenance ?? {}).map(([step, s]) => [step, round(s.totalMs / Math.max(1, s.passes), 1)])),
    maintenancePasses: Math.max(0, ...Object.values(managerStats.maintenance ?? {}).map((s) => s.passes)),
    spans: (managerStats.spans ?? 0) + (childStats.spans ?? 0),
    spansByName: sumByName(managerStats.spansByName, childStats.spansByName),
    itemSpansInTrace: childStats.itemSpansInTrace ?? 0,
    // BENCH_STATEMENTS=1: the run's slowest statements on the server (the maintenance queries'
    // target reads these: under 50 ms each).
    ...(await statements.read().then((slowest) => (slowest ? { slowestStatements: slowest } : {}))),
  };
}

function sumByName(...counts: Array<Record<string, number> | undefined>): Record<string, number> {
  const sum: Record<string, number> = {};
  for (const c of counts) for (const [name, k] of Object.entries(c ?? {})) sum[name] = (sum[name] ?? 0) + k;
  return sum;
}

/**
 * The cost of telemetry: Fanout with an OpenTelemetry SDK (every span kept in memory, metrics
 * read every second) against Fanout without, at the same size, in turns (which one goes first
 * alternates); the pair with the median overhead is printed, with every pair's (`pairs`: wall
 * seconds, CPU seconds and the children's live heap). Single pairs on this 2-core machine vary by
 * tens of percent, so the pairs are more than the other scenarios' repeats (BENCH_OTEL_REPEATS,
 * default 9). The traced run's spans are counted
 * by name, and its item spans in the caller's trace, to show what was recorded.
 */
async function measureTelemetry(n: number, repeats: number) {
  const pairs = [];
  for (let i = 0; i < repeats; i++) {
    let plain;
    let traced;
    if (i % 2 === 0) {
      plain = await measureFanout(n, false, otelWarmup);
      traced = await measureFanout(n, true, otelWarmup);
    } else {
      traced = await measureFanout(n, true, otelWarmup);
      plain = await measureFanout(n, false, otelWarmup);
    }
    pairs.push({ round: i + 1, plain, traced, overhead: traced.seconds / plain.seconds - 1 });
  }
  pairs.sort((a, b) => a.overhead - b.overhead);
  const median = pairs[Math.floor(pairs.length / 2)]!;
  print({
    scenario: 'fanout_otel',
    n,
    seconds: round(median.traced.seconds),
    plainSeconds: round(median.plain.seconds),
    overheadPct: round(median.overhead * 100, 1),
    overheadsPct: pairs.map((p) => round(p.overhead * 100, 1)),
    sampler: 'ParentBased(AlwaysOn): every span recorded and exported',
    warmupItems: otelWarmup,
    spansPerItem: round(median.traced.spans / (n + otelWarmup)),
    // The measured task's item spans in the trace it was submitted in (every attempt of every item).
    itemSpansInTrace: median.traced.itemSpansInTrace,
    spansByName: median.traced.spansByName,
    cpuSeconds: { traced: median.traced.cpuSeconds, plain: median.plain.cpuSeconds },
    // Every pair in the order it ran: wall seconds, CPU seconds (the machine's and each process's)
    // and the children process's live heap.
    pairs: pairs.map((p) => ({
      round: p.round,
      plainSeconds: round(p.plain.seconds),
      tracedSeconds: round(p.traced.seconds),
      overheadPct: round(p.overhead * 100, 1),
      cpuSeconds: { plain: p.plain.cpuSeconds, traced: p.traced.cpuSeconds },
      childrenLiveHeapMb: { plain: p.plain.childrenLiveHeapMb, traced: p.traced.childrenLiveHeapMb },
      spans: p.traced.spans,
    })).sort((a, b) => a.round - b.round),
  });
}

const fanoutSeconds = new Map<number, number>();
const childrenHeap = new Map<number, number>();
// BENCH_RAW=0: Fanout only, no raw pg-boss or baselines (e.g. BENCH_SIZES=10000,1000000).
const withRaw = process.env.BENCH_RAW !== '0';
try {
  for (const n of sizes) {
    const pairs = [];
    const against: Record<'raw-wellrun' | 'flow', { seconds: number; perSec: number; ratio: number; fanoutSeconds: number; cpuSeconds: number; machineCpuSeconds: number | null; fanoutMachineCpuSeconds: number | null }[]> = { 'raw-wellrun': [], flow: [] };
    if (!withRaw) {
      // Fanout alone (BENCH_RAW=0): the scale scenario, where raw pg-boss would take minutes.
      const fanout = await measureFanout(n);
      const { spansByName: _byName, itemSpansInTrace: _inTrace, ...rest } = fanout;
      print({ ...rest, seconds: round(fanout.seconds) });
      fanoutSeconds.set(n, fanout.seconds);
      childrenHeap.set(n, fanout.childrenLiveHeapMb);
      continue;
    }
    for (let i = 0; i < repeatsFor(n); i++) {
      const raw = await measureRaw(n);
      const fanout = await measureFanout(n);
      pairs.push({ raw, fanout, ratio: raw.seconds / fanout.seconds });
      // The stronger baselines, each next to the Fanout run just made (the machine drifts).
      for (const mode of baselines) {
        const b = await measureBaseline(mode, n);
        against[mode].push({ ...b, ratio: b.seconds / fanout.seconds, fanoutSeconds: fanout.seconds, fanoutMachineCpuSeconds: fanout.cpuSeconds.machine });
      }
    }
    pairs.sort((a, b) => a.ratio - b.ratio);
    const median = pairs[Math.floor(pairs.length / 2)]!;
    const ratios = pairs.length > 1 ? { ratios: pairs.map((p) => round(p.ratio)) } : {};
    print({ ...median.raw, seconds: round(median.raw.seconds) });
    const { scenario, n: _n, seconds, perSec, spansByName: _byName, itemSpansInTrace: _inTrace, ...rest } = median.fanout;
    print({ scenario, n, seconds: round(seconds), perSec, ratioToRaw: round(median.ratio), ...ratios, ...rest });
    for (const mode of baselines) {
      const runs = against[mode].sort((a, b) => a.ratio - b.ratio);
      const mid = runs[Math.floor(runs.length / 2)]!;
      print({
        scenario: mode === 'flow' ? 'pgboss_flow' : 'pgboss_raw_wellrun',
        n,
        seconds: round(mid.seconds),
        perSec: mid.perSec,
        fanoutSeconds: round(mid.fanoutSeconds),
        fanoutPerSec: Math.round(n / mid.fanoutSeconds),
        // Fanout's speed as a multiple of this baseline's (above 1: Fanout is faster).
        fanoutRatio: round(mid.ratio),
        ...(runs.length > 1 ? { fanoutRatios: runs.map((r) => round(r.ratio)) } : {}),
        // The CPU both spent over their timed parts: the whole machine's (PostgreSQL included) and
        // the baseline's own process. On a machine whose cores are all busy, time follows CPU.
        cpuSeconds: { machine: mid.machineCpuSeconds, worker: mid.cpuSeconds },
        fanoutMachineCpuSeconds: mid.fanoutMachineCpuSeconds,
        ...(mid.machineCpuSeconds && mid.fanoutMachineCpuSeconds ? { fanoutMachineCpuRatio: round(mid.fanoutMachineCpuSeconds / mid.machineCpuSeconds) } : {}),
        ...(runs.length > 1 && runs.every((r) => r.machineCpuSeconds && r.fanoutMachineCpuSeconds)
          ? { fanoutMachineCpuRatios: runs.map((r) => round(r.fanoutMachineCpuSeconds! / r.machineCpuSeconds!)) }
          : {}),
      });
    }
    fanoutSeconds.set(n, median.fanout.seconds);
    childrenHeap.set(n, median.fanout.childrenLiveHeapMb);
  }
  const [small, large] = [Math.min(...sizes), Math.max(...sizes)];
  if (sizes.length > 0 && small !== large) {
    const [t1, t2] = [fanoutSeconds.get(small)!, fanoutSeconds.get(large)!];
    print({
      scenario: 'fanout_scaling',
      n: large,
      seconds: round(t2),
      timeRatio: round(t2 / t1),
      sizeRatio: large / small,
      // Items per second at the large size over the small one (the scale target: at least 0.8),
      // and the children's live heap (target: within 1.5 times).
      rateRatio: round(large / t2 / (small / t1)),
      childrenHeapRatio: round(childrenHeap.get(large)! / childrenHeap.get(small)!),
    });
  }
  const otelSize = Number(process.env.BENCH_OTEL_SIZE ?? 10_000);
  if (otelSize > 0) await measureTelemetry(otelSize, Number(process.env.BENCH_OTEL_REPEATS ?? 9));
} finally {
  await server.stop();
}
