// Retention under a steady load (opt-in: `node --conditions=dev-source bench/retention.ts`, about
// 25 minutes with the defaults; not part of `pnpm bench`). Two worker processes with a one-minute
// retention (the shortest allowed) work tasks of BENCH_RET_TASK items (default 20,000) submitted
// at a steady BENCH_RET_RATE items per second (default 1,500: a minute of it stays under 100,000
// items) until BENCH_RET_ITEMS (default 2,000,000) have run. The sizes of Fanout's tables and
// pg-boss's are read after the first 100,000 items, at every 500,000, and once retention has
// deleted the last task's items; the target is that they come back to their size after the first
// 100,000 (deleted rows' space reused, not piling up). Prints one JSON line per reading and a
// summary line.
import { migrationsDir } from '@fanout/prisma-adapter';
import { createAppRuntime, startWorker, testDefinition } from '@fanout/runtime-tests/harness';
import pg from 'pg';
import { benchServer } from './server.ts';

const TASK = Number(process.env.BENCH_RET_TASK ?? 20_000);
const RATE = Number(process.env.BENCH_RET_RATE ?? 1_500);
const TOTAL = Number(process.env.BENCH_RET_ITEMS ?? 2_000_000);
const RETENTION_MS = 60_000;
// The first reading: after 100,000 items (or a quarter of a shorter run).
const FIRST = Math.min(100_000, Math.floor(TOTAL / 4));

const print = (o: object) => console.log(JSON.stringify(o));
const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;

const server = await benchServer();
try {
  const url = await server.database('bench_retention', [migrationsDir]);
  const env = { FANOUT_CONCURRENCY: 50, FANOUT_LOG_LEVEL: 'error', FANOUT_PRINT_TASKS: 0, FANOUT_RETENTION_MS: RETENTION_MS, FANOUT_MAINTENANCE_MS: 2000 };
  const workers = await Promise.all([1, 2].map(() => startWorker(url, env)));
  // The same retention as the workers: each process sets pg-boss's deletion of the child queue's
  // completed jobs from it when it starts (the last one to start wins).
  const api = createAppRuntime({ databaseUrl: url, definitions: [testDefinition()], poolSize: 4, maintenance: { retentionMs: RETENTION_MS } });
  await api.fanout.start({ managers: false, children: false, maintenance: false });
  const db = new pg.Client({ connectionString: url });
  await db.connect();

  /** Table sizes (with their indexes and TOAST), Fanout's by table and pg-boss's schema in all. */
  async function sizes() {
    const { rows } = await db.query<{ name: string; bytes: string }>(
      `SELECT c.relname AS name, pg_total_relation_size(c.oid) AS bytes FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE c.relkind IN ('r', 'p') AND ((n.nspname = 'public' AND c.relname LIKE 'fanout%') OR n.nspname = 'pgboss')`,
    );
    const out: Record<string, number> = { pgboss: 0 };
    for (const r of rows) {
      if (r.name.startsWith('fanout')) out[r.name] = mb(Number(r.bytes));
      else out.pgboss = Math.round((out.pgboss! + Number(r.bytes) / 1024 / 1024) * 10) / 10;
    }
    return out;
  }
  const total = (s: Record<string, number>) => Math.round(Object.values(s).reduce((a, b) => a + b, 0) * 10) / 10;
  const itemRows = async () => Number((await db.query('SELECT count(*) AS n FROM fanout_item')).rows[0].n);

  const started = performance.now();
  const ids: string[] = [];
  let submitted = 0;
  let firstReading: Record<string, number> | null = null;
  let nextReading = 500_000;
  const readings: { items: number; seconds: number; itemRows: number; totalMb: number }[] = [];
  const completedItems = async () =>
    Number((await db.query(`SELECT coalesce(sum(total), 0) AS n FROM fanout_task WHERE status = 'completed'`)).rows[0].n);

  while (submitted < TOTAL) {
    // Steady: the next task goes in when the rate says it is due.
    const dueAt = started + (submitted / RATE) * 1000;
    while (performance.now() < dueAt) await new Promise((r) => setTimeout(r, Math.min(200, dueAt - performance.now())));
    const task = await api.fanout.submit('test_batch', { count: Math.min(TASK, TOTAL - submitted) });
    ids.push(task.id);
    submitted += Math.min(TASK, TOTAL - submitted);
    const done = await completedItems();
    if (!firstReading && done >= FIRST) {
      firstReading = await sizes();
      print({ scenario: 'retention_reading', items: done, seconds: Math.round((performance.now() - started) / 1000), itemRows: await itemRows(), sizesMb: firstReading, totalMb: total(firstReading) });
    }
    if (done >= nextReading) {
      nextReading += 500_000;
      const s = await sizes();
      readings.push({ items: done, seconds: Math.round((performance.now() - started) / 1000), itemRows: await itemRows(), totalMb: total(s) });
      print({ scenario: 'retention_reading', ...readings.at(-1), sizesMb: s });
    }
  }
  // Every task completes, then retention deletes the last one's items.
  for (;;) {
    const { rows } = await db.query(`SELECT count(*) FILTER (WHERE status <> 'completed') AS running, count(*) FILTER (WHERE purged_at IS NULL) AS kept FROM fanout_task WHERE id = ANY($1::uuid[])`, [ids]);
    if (Number(rows[0].running) === 0 && Number(rows[0].kept) === 0) break;
    await new Promise((r) => setTimeout(r, 1000));
  }
  const end = await sizes();
  const seconds = Math.round((performance.now() - started) / 1000);
  print({ scenario: 'retention_reading', items: TOTAL, seconds, itemRows: await itemRows(), sizesMb: end, totalMb: total(end), purgedEverything: true });
  print({
    scenario: 'retention',
    items: TOTAL,
    taskItems: TASK,
    ratePerSec: RATE,
    retentionMs: RETENTION_MS,
    seconds,
    firstReadingItems: FIRST,
    firstReadingMb: total(firstReading!),
    peakMb: Math.max(total(firstReading!), ...readings.map((r) => r.totalMb)),
    endMb: total(end),
    // Fanout's and pg-boss's tables at the end over their size after the first reading (target: about 1).
    endRatio: Math.round((total(end) / total(firstReading!)) * 100) / 100,
  });
  await db.end();
  await api.close();
  await Promise.all(workers.map((w) => w.stop()));
} finally {
  await server.stop();
}
