// One benchmark process. Prints one JSON line on stdout when done: its timings and peak RSS.
//   raw <url> <n>              insert n no-op jobs into a pg-boss queue and work them
//   raw-wellrun <url> <n>      the same, run well: workers first, jobs inserted in pages of 1,000
//                              while they work, the queue's statistics refreshed, timed on the
//                              database's clock up to its last completion
//   flow <url> <n>             pg-boss's own fan-in: one job depending on n no-op jobs (flow()),
//                              until the fan-in job has run
//   fanout-manager <url>       run Fanout managers only, until told to stop (SIGTERM)
//   fanout-children <url>      run Fanout children only, until told to stop (SIGTERM)
import { constants, PerformanceObserver } from 'node:perf_hooks';
import pg from 'pg';
import { PgBoss } from 'pg-boss';
import { createAppRuntime } from '../src/db.ts';
import { databaseMs, machineCpuSeconds, machineCpuSince } from './clock.ts';
import { BATCH, noop, WORKERS } from './noop.ts';

const [mode, url, nArg] = process.argv.slice(2);
if (!mode || !url) throw new Error('usage: scenario.ts <mode> <url> [n]');

const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;
const peakRssMb = () => mb(process.resourceUsage().maxRSS * 1024);
/** CPU seconds (user + system) this process spent since `from`. */
const cpuSince = (from: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(from);
  return Math.round((used.user + used.system) / 1e4) / 100;
};

// The live heap: heap in use right after each full collection, i.e. what the process keeps and
// not what the collector has not got round to freeing yet (RSS mostly measures the latter).
// Full collections are observed as V8 makes them, plus one forced at the end of the run; forcing
// them during the run would put the measurement's own cost in the figures.
let peakLiveHeap = 0;
const sampleLiveHeap = () => {
  peakLiveHeap = Math.max(peakLiveHeap, process.memoryUsage().heapUsed);
};
new PerformanceObserver((list) => {
  if (list.getEntries().some((entry) => (entry as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR)) {
    sampleLiveHeap();
  }
}).observe({ entryTypes: ['gc'] });
const finalLiveHeapMb = () => {
  (globalThis as { gc?: () => void }).gc?.();
  sampleLiveHeap();
  return mb(peakLiveHeap);
};

if (mode === 'raw') {
  const n = Number(nArg);
  const boss = new PgBoss({ connectionString: url, max: 10, useListenNotify: true });
  boss.on('error', (e) => console.error(e));
  await boss.start();
  await boss.createQueue('bench_raw', { notify: true });
  let done = 0;
  const finished = Promise.withResolvers<void>();
  const started = performance.now();
  const cpu = process.cpuUsage();
  for (let i = 0; i < n; i += 1000) {
    await boss.insert('bench_raw', Array.from({ length: Math.min(1000, n - i) }, (_, j) => ({ data: { i: i + j } })));
  }
  await boss.work('bench_raw', { batchSize: BATCH, localConcurrency: WORKERS, pollingIntervalSeconds: 0.5, burstWhenBatchFull: true }, async (jobs) => {
    done += jobs.length;
    if (done >= n) finished.resolve();
  });
  await finished.promise;
  const seconds = (performance.now() - started) / 1000;
  const cpuSeconds = cpuSince(cpu);
  const liveHeapMb = finalLiveHeapMb();
  await boss.stop({ graceful: true });
  console.log(JSON.stringify({ seconds, cpuSeconds, peakRssMb: peakRssMb(), liveHeapMb }));
  process.exit(0);
} else if (mode === 'raw-wellrun' || mode === 'flow') {
  const n = Number(nArg);
  const boss = new PgBoss({ connectionString: url, max: 10, useListenNotify: true, ...(mode === 'flow' ? { flowIntervalSeconds: 1 } : {}) });
  boss.on('error', (e) => console.error(e));
  await boss.start();
  const queue = mode === 'flow' ? 'bench_flow_item' : 'bench_wellrun';
  await boss.createQueue(queue, { notify: true });
  // The fan-in queue polls: a job a flow unblocks sends no notification.
  if (mode === 'flow') await boss.createQueue('bench_flow_fanin');
  // A light connection of its own: the clock, and the end (looked for every 5 ms once every handler
  // has returned).
  const watcher = new pg.Client({ connectionString: url });
  await watcher.connect();
  const fanIn = Promise.withResolvers<void>();
  // Workers first, so the first page is worked while the next goes in.
  let handled = 0;
  const allHandled = Promise.withResolvers<void>();
  await boss.work(queue, { batchSize: BATCH, localConcurrency: WORKERS, pollingIntervalSeconds: 0.5, burstWhenBatchFull: true }, async (jobs) => {
    handled += jobs.length;
    if (handled >= n) allHandled.resolve();
  });
  if (mode === 'flow') {
    await boss.work('bench_flow_fanin', { pollingIntervalSeconds: 0.5 }, async () => {
      fanIn.resolve();
    });
  }
  const cpu = process.cpuUsage();
  let seconds: number;
  let machineCpu: number | null;
  if (mode === 'flow') {
    const machineBefore = machineCpuSeconds();
    const started = performance.now();
    const refs = Array.from({ length: n }, (_, i) => `i${i}`);
    await boss.flow([...refs.map((ref, i) => ({ ref, name: queue, data: { i } })), { ref: 'fan-in', name: 'bench_flow_fanin', dependsOn: refs }]);
    await fanIn.promise;
    seconds = (performance.now() - started) / 1000;
    machineCpu = machineCpuSince(machineBefore);
  } else {
    // Timed on the database's clock, as the Fanout scenario is: from before the first insert to
    // the last completion the database stored.
    const machineBefore = machineCpuSeconds();
    const startedMs = await databaseMs(watcher);
    for (let i = 0; i < n; i += 1000) {
      await boss.insert(queue, Array.from({ length: Math.min(1000, n - i) }, (_, j) => ({ data: { i: i + j } })));
      // The planner sees the queue's real size (Fanout's manager refreshes its own statistics too).
      if (i === 0 || i === 10_000) await watcher.query('ANALYZE pgboss.job');
    }
    // Every handler has returned; the clock stops at the last completion, once all are committed
    // (asked only from then on, so the watching does not load the run).
    await allHandled.promise;
    for (;;) {
      const { rows } = await watcher.query<{ open: boolean }>("SELECT EXISTS (SELECT 1 FROM pgboss.job WHERE name = $1 AND state IN ('created', 'retry', 'active')) AS open", [queue]);
      if (!rows[0]!.open) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    const { rows } = await watcher.query<{ at: string }>('SELECT extract(epoch FROM max(completed_on)) * 1000 AS at FROM pgboss.job WHERE name = $1', [queue]);
    seconds = (Number(rows[0]!.at) - startedMs) / 1000;
    machineCpu = machineCpuSince(machineBefore);
  }
  const cpuSeconds = cpuSince(cpu);
  const liveHeapMb = finalLiveHeapMb();
  await watcher.end();
  await boss.stop({ graceful: true });
  console.log(JSON.stringify({ seconds, cpuSeconds, machineCpuSeconds: machineCpu, peakRssMb: peakRssMb(), liveHeapMb }));
  process.exit(0);
} else {
  const managers = mode === 'fanout-manager';
  // BENCH_OTEL=1: the same process with an OpenTelemetry SDK registered (traces and metrics).
  const sdk = process.env.BENCH_OTEL === '1' ? (await import('./otel.ts')).registerBenchSdk() : null;
  const app = createAppRuntime({
    databaseUrl: url,
    definitions: [noop],
    poolSize: 10,
    worker: { concurrency: BATCH * WORKERS, batchSize: BATCH },
  });
  await app.fanout.start({ managers, children: !managers, maintenance: managers });
  const cpu = process.cpuUsage();
  console.error(`READY ${mode}`);
  process.once('SIGTERM', async () => {
    // CPU from ready to the end of the run (the bench signals right after the task completes).
    const cpuSeconds = cpuSince(cpu);
    const liveHeapMb = finalLiveHeapMb();
    await app.close();
    const spans = sdk ? await sdk.spans(process.env.BENCH_TRACE_ID) : { spans: 0, spansByName: {}, itemSpansInTrace: 0 };
    await sdk?.close();
    // The maintenance loop's steps as this process timed them (the manager process runs the loop).
    const maintenance = app.fanout.stats.snapshot().maintenance;
    console.log(JSON.stringify({ cpuSeconds, peakRssMb: peakRssMb(), liveHeapMb, maintenance, ...spans }));
    process.exit(0);
  });
}
