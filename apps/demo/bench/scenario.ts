// One benchmark process. Prints one JSON line on stdout when done: its timings and peak RSS.
//   raw <url> <n>              insert n no-op jobs into a pg-boss queue and work them
//   fanout-manager <url>       run Fanout managers only, until told to stop (SIGTERM)
//   fanout-children <url>      run Fanout children only, until told to stop (SIGTERM)
import { PgBoss } from 'pg-boss';
import { createAppRuntime } from '../src/db.ts';
import { BATCH, noop, WORKERS } from './noop.ts';

const [mode, url, nArg] = process.argv.slice(2);
if (!mode || !url) throw new Error('usage: scenario.ts <mode> <url> [n]');


const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;
const peakRssMb = () => mb(process.resourceUsage().maxRSS * 1024);

// The live heap, sampled after a full collection: what the process keeps, not what the
// collector has not got round to freeing yet (RSS mostly measures the latter).
let peakLiveHeap = 0;
const gc = (globalThis as { gc?: () => void }).gc;
const sampler = setInterval(() => {
  gc?.();
  peakLiveHeap = Math.max(peakLiveHeap, process.memoryUsage().heapUsed);
}, 250);
sampler.unref();

if (mode === 'raw') {
  const n = Number(nArg);
  const boss = new PgBoss({ connectionString: url, max: 10, useListenNotify: true });
  boss.on('error', (e) => console.error(e));
  await boss.start();
  await boss.createQueue('bench_raw', { notify: true });
  let done = 0;
  const finished = Promise.withResolvers<void>();
  const started = performance.now();
  for (let i = 0; i < n; i += 1000) {
    await boss.insert('bench_raw', Array.from({ length: Math.min(1000, n - i) }, (_, j) => ({ data: { i: i + j } })));
  }
  await boss.work('bench_raw', { batchSize: BATCH, localConcurrency: WORKERS, pollingIntervalSeconds: 0.5, burstWhenBatchFull: true }, async (jobs) => {
    done += jobs.length;
    if (done >= n) finished.resolve();
  });
  await finished.promise;
  const seconds = (performance.now() - started) / 1000;
  await boss.stop({ graceful: true });
  console.log(JSON.stringify({ seconds, peakRssMb: peakRssMb(), liveHeapMb: mb(peakLiveHeap) }));
  process.exit(0);
} else {
  const managers = mode === 'fanout-manager';
  const app = createAppRuntime({
    databaseUrl: url,
    definitions: [noop],
    poolSize: 10,
    worker: { concurrency: BATCH * WORKERS, batchSize: BATCH },
  });
  await app.fanout.start({ managers, children: !managers, maintenance: managers });
  console.error(`READY ${mode}`);
  process.once('SIGTERM', async () => {
    await app.close();
    console.log(JSON.stringify({ peakRssMb: peakRssMb(), liveHeapMb: mb(peakLiveHeap) }));
    process.exit(0);
  });
}
