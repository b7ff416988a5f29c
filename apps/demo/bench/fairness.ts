// Part of `pnpm bench`: fair shares between tenants and tasks, on one PostgreSQL with two worker
// processes (50 handlers each). Every figure is a ratio to a baseline measured in the same run:
// - head_of_line: a 10-item task's latency (submit to completion, read from the task row) alone,
//   and submitted 1 s after another tenant's 50,000-item task; that task's items/s with the small
//   tasks beside it against its items/s alone, measured before and after (target: latency ratio
//   <= 3, the large task keeps >= 0.9); medians of BENCH_FAIR_ROUNDS rounds (5: a round's ratio
//   ranged from 0.8 to 7 on this project's 2-core machine, and a median of three flipped around
//   the target from run to run), with every small task's latency pooled as well;
// - many_small: 500 tasks of 20 items from 10 concurrent submitters against one task of 10,000
//   items run before and after (target: >= 0.5 of its items/s, p95 from submit to completion
//   under 1 s), after an unmeasured round of 100 such tasks (BENCH_MANY_WARMUP); medians of
//   BENCH_MANY_ROUNDS rounds (3);
// - io_bound: one task of items that each wait 20 ms (an I/O-bound child), against the ideal of
//   two processes with 50 handlers each, 5,000 items/s (target: >= 0.8 of it); medians of
//   BENCH_IO_ROUNDS rounds (3), each with its rate while its manager was still inserting pages
//   and after (read from the item rows).
// Prints one JSON line per scenario.
import { migrationsDir } from '@fanout/prisma-adapter';
import { createAppRuntime, startWorker, testDefinition } from '@fanout/runtime-tests/harness';
import pg from 'pg';
import { machineCpuSeconds, machineCpuSince, processCpuSeconds } from './clock.ts';
import { benchServer, statementTimes } from './server.ts';

const BIG = Number(process.env.BENCH_FAIR_BIG ?? 50_000);
const SMALL_ROUNDS = Number(process.env.BENCH_FAIR_SMALL ?? 5);
const MANY = Number(process.env.BENCH_MANY_TASKS ?? 500);
const MANY_WARMUP = Number(process.env.BENCH_MANY_WARMUP ?? 100);
// Rounds of the two scenarios whose baselines vary most between runs (medians printed).
const FAIR_ROUNDS = Number(process.env.BENCH_FAIR_ROUNDS ?? 5);
const MANY_ROUNDS = Number(process.env.BENCH_MANY_ROUNDS ?? 3);
const IO_ITEMS = Number(process.env.BENCH_IO_ITEMS ?? 20_000);
const IO_ROUNDS = Number(process.env.BENCH_IO_ROUNDS ?? 3);
const DISPATCH_AT_SUBMIT = Number(process.env.BENCH_DISPATCH_AT_SUBMIT ?? 100);
const SUBMITTERS = 10;
// BENCH_SCENARIOS=io_bound (a comma list) runs only those scenarios, for working on one of them.
const ONLY = process.env.BENCH_SCENARIOS ? process.env.BENCH_SCENARIOS.split(',') : null;
const runs = (scenario: string) => !ONLY || ONLY.includes(scenario);

const round = (x: number) => Math.round(x * 1000) / 1000;
const print = (o: object) => console.log(JSON.stringify(o));
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
/** The median over a scenario's rounds of one of their figures. */
const medianOf = <R>(rounds: readonly R[], pick: (r: R) => number) => quantile(rounds.map(pick), 0.5);

const server = await benchServer();
try {
  const url = await server.database('bench_fairness', [migrationsDir]);
  const workers = await Promise.all([1, 2].map(() => startWorker(url, { FANOUT_CONCURRENCY: 50, FANOUT_LOG_LEVEL: 'error', FANOUT_PRINT_TASKS: 0, ...(process.env.BENCH_MANAGERS ? { FANOUT_MANAGER_CONCURRENCY: process.env.BENCH_MANAGERS } : {}) })));
  // Tasks of up to DISPATCH_AT_SUBMIT items are dispatched by submit() itself (0: by a manager job).
  const api = createAppRuntime({ databaseUrl: url, definitions: [testDefinition({ dispatchAtSubmit: DISPATCH_AT_SUBMIT })], poolSize: 12 });
  await api.fanout.start({ managers: false, children: false, maintenance: false });
  const db = new pg.Client({ connectionString: url });
  await db.connect();

  /**
   * Waits for every task to end; fails when one did not complete. Each poll asks only for the tasks
   * not yet seen ended, so waiting on 500 tasks costs the database no more than waiting on one by
   * the end (the measured processes share its two cores). It looks every 5 ms for the first 200 ms
   * (a small task's end, which lets the next one go), then every 25 ms: latencies and rates are read
   * from the task rows, and a look every 5 ms through a run of seconds was hundreds of statements
   * competing with the measured processes. The statement is prepared with its array as a scalar
   * subquery, so it is not planned again at every look.
   */
  async function completed(ids: string[]): Promise<void> {
    let open = ids;
    const since = performance.now();
    while (open.length > 0) {
      const { rows } = await db.query<{ id: string; status: string }>({
        name: 'bench_completed',
        text: "SELECT id, status FROM fanout_task WHERE id = ANY((SELECT $1::uuid[])::uuid[]) AND status IN ('completed', 'failed', 'cancelled')",
        values: [open],
      });
      const failed = rows.find((r) => r.status !== 'completed');
      if (failed) throw new Error(`task ${failed.id} ended ${failed.status}`);
      if (rows.length > 0) {
        const ended = new Set(rows.map((r) => r.id));
        open = open.filter((id) => !ended.has(id));
      }
      if (open.length > 0) await new Promise((r) => setTimeout(r, performance.now() - since < 200 ? 5 : 25));
    }
  }
  /** Each completed task's latency (submit to completion) and its run's seconds. */
  async function timings(ids: string[]): Promise<Map<string, { latencyMs: number; runSeconds: number }>> {
    const { rows } = await db.query<{ id: string; latency_ms: number; run_s: number }>(
      `SELECT id, extract(epoch FROM completed_at - created_at) * 1000 AS latency_ms,
              extract(epoch FROM completed_at - started_at) AS run_s
       FROM fanout_task WHERE id = ANY($1::uuid[])`,
      [ids],
    );
    return new Map(rows.map((r) => [r.id, { latencyMs: Number(r.latency_ms), runSeconds: Number(r.run_s) }]));
  }
  /** Waits for every task to complete; returns each one's latency and its run's seconds. */
  async function finished(ids: string[]): Promise<Map<string, { latencyMs: number; runSeconds: number }>> {
    await completed(ids);
    return timings(ids);
  }
  const submit = (count: number, tenant: string, item: { sleepMs?: number } = {}) => api.fanout.submit('test_batch', { count, item }, { tenant }).then((t) => t.id);
  /** Small tasks one after the other: their ids and latencies. */
  async function smallTasks(): Promise<{ ids: string[]; latencies: number[] }> {
    const ids: string[] = [];
    const latencies: number[] = [];
    for (let i = 0; i < SMALL_ROUNDS; i++) {
      const id = await submit(10, 'small');
      ids.push(id);
      latencies.push((await finished([id])).get(id)!.latencyMs);
    }
    return { ids, latencies };
  }
  /**
   * Where a small task's time went (medians, ms): to its first item's start, and from there to its
   * last item's end. (Its completion time is the settle transaction's start, a few ms before its
   * last item's `finished_at`: not a phase worth printing.)
   */
  async function smallPhases(ids: string[]) {
    const { rows: [phases] } = await db.query<{ to_first: number; run: number }>(
      `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM f.first - t.created_at)) * 1000 AS to_first,
              percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM f.last - f.first)) * 1000 AS run
       FROM fanout_task t
       JOIN (SELECT task_id, min(started_at) AS first, max(finished_at) AS last FROM fanout_item WHERE task_id = ANY($1::uuid[]) GROUP BY task_id) f ON f.task_id = t.id
       WHERE t.id = ANY($1::uuid[])`,
      [ids],
    );
    return { toFirstItem: Math.round(phases!.to_first), running: Math.round(phases!.run) };
  }

  try {
    if (runs('head_of_line')) {
      // Rounds, each ratio against baselines measured next to it: the large task's rate alone
      // before and after each contended run (the ratio to their mean), the small tasks alone right
      // before it. A single large run's rate varies by a quarter from one run to the next on this
      // machine, so a ratio to one run measured a minute earlier was mostly noise.
      await smallTasks(); // warm-up
      const bigRate = async (id: string) => BIG / (await finished([id])).get(id)!.runSeconds;
      let bigAlone = await bigRate(await submit(BIG, 'big'));
      const bigAloneRates = [bigAlone];
      const rounds: { smallAloneMs: number; smallBehindBigMs: number; smallBehindBigMaxMs: number; latencyRatio: number; bigContendedPerSec: number; bigKept: number }[] = [];
      const aloneIds: string[] = [];
      const behindIds: string[] = [];
      const aloneLatencies: number[] = [];
      const behindLatencies: number[] = [];
      for (let i = 0; i < FAIR_ROUNDS; i++) {
        const aloneTasks = await smallTasks();
        const bigId = await submit(BIG, 'big');
        await new Promise((r) => setTimeout(r, 1000));
        const contendedTasks = await smallTasks();
        const contended = await bigRate(bigId);
        const bigAfter = await bigRate(await submit(BIG, 'big'));
        bigAloneRates.push(bigAfter);
        const alone = quantile(aloneTasks.latencies, 0.5);
        const behind = quantile(contendedTasks.latencies, 0.5);
        rounds.push({
          smallAloneMs: Math.round(alone),
          smallBehindBigMs: Math.round(behind),
          smallBehindBigMaxMs: Math.round(Math.max(...contendedTasks.latencies)),
          latencyRatio: round(behind / alone),
          bigContendedPerSec: Math.round(contended),
          bigKept: round(contended / ((bigAlone + bigAfter) / 2)),
        });
        aloneIds.push(...aloneTasks.ids);
        behindIds.push(...contendedTasks.ids);
        aloneLatencies.push(...aloneTasks.latencies);
        behindLatencies.push(...contendedTasks.latencies);
        bigAlone = bigAfter;
      }
      print({
        scenario: 'head_of_line',
        bigItems: BIG,
        rounds: FAIR_ROUNDS,
        // Medians over the rounds; each round's figures in `byRound`.
        latencyRatio: medianOf(rounds, (r) => r.latencyRatio),
        bigKept: medianOf(rounds, (r) => r.bigKept),
        smallAloneMs: medianOf(rounds, (r) => r.smallAloneMs),
        smallBehindBigMs: medianOf(rounds, (r) => r.smallBehindBigMs),
        smallBehindBigMaxMs: Math.max(...rounds.map((r) => r.smallBehindBigMaxMs)),
        // Every small task of every round pooled: the median behind over the median alone, and
        // the 90th percentile behind (the first task of a round, submitted while the large task's
        // pages still go in, is most of that tail).
        pooledLatencyRatio: round(quantile(behindLatencies, 0.5) / quantile(aloneLatencies, 0.5)),
        smallBehindBigP90Ms: Math.round(quantile(behindLatencies, 0.9)),
        bigAlonePerSec: Math.round(quantile(bigAloneRates, 0.5)),
        bigAloneRuns: bigAloneRates.map(Math.round),
        bigContendedPerSec: medianOf(rounds, (r) => r.bigContendedPerSec),
        byRound: rounds,
        medianPhasesMs: { alone: await smallPhases(aloneIds), behindBig: await smallPhases(behindIds) },
      });
    }

    if (runs('many_small')) {
      /** One task of 10,000 items: its items per second, submit to completion. */
      const oneTask = async () => {
        const oneId = await submit(10_000, 'one');
        return (10_000 / (await finished([oneId])).get(oneId)!.latencyMs) * 1000;
      };
      /** `count` tasks of 20 items from the submitters, each its own tenant: their ids once all ended. */
      const manySmall = async (count: number) => {
        const ids: string[] = [];
        await Promise.all(
          Array.from({ length: SUBMITTERS }, async (_, s) => {
            for (let i = s; i < count; i += SUBMITTERS) ids.push(await submit(20, `team-${s}`));
          }),
        );
        await completed(ids);
        return ids;
      };
      // A round of the same shape first, unmeasured: the first run of a statement on each pooled
      // connection is planned (up to six times, until PostgreSQL settles on its generic plan), and
      // the submit path's code is cold. A platform that has been up a minute has paid both.
      if (MANY_WARMUP > 0) await manySmall(MANY_WARMUP);
      // Rounds, each measured between two runs of the one task: its ratio is to their mean (a
      // single run of the one task varies by a quarter on this machine).
      let one = await oneTask();
      const oneRates = [one];
      const rounds: { seconds: number; itemsPerSec: number; ratioToOneTask: number; p50Ms: number; p95Ms: number; cpuSeconds: object }[] = [];
      const allIds: string[] = [];
      // BENCH_STATEMENTS=1: the first round's statements as the server timed them, by total time.
      const statements = statementTimes(url);
      let firstRoundStatements: Awaited<ReturnType<typeof statements.read>> = null;
      for (let i = 0; i < MANY_ROUNDS; i++) {
        if (i === 0) await statements.reset();
        const cpuBefore = { machine: machineCpuSeconds(), workers: workers.map((w) => processCpuSeconds(w.pid)), own: process.cpuUsage() };
        const started = performance.now();
        const ids = await manySmall(MANY);
        const seconds = (performance.now() - started) / 1000;
        const own = process.cpuUsage(cpuBefore.own);
        // Busy CPU seconds over the round: the machine's (PostgreSQL is most of what the processes
        // below leave), each worker process's, and this process's (the submits and the waiting).
        const cpuSeconds = {
          machine: machineCpuSince(cpuBefore.machine),
          workers: workers.map((w, k) => round(processCpuSeconds(w.pid) - cpuBefore.workers[k]!)),
          submitter: round((own.user + own.system) / 1e6),
        };
        if (i === 0) firstRoundStatements = await statements.read(15, 'total');
        const latencies = [...(await timings(ids)).values()].map((m) => m.latencyMs);
        const after = await oneTask();
        oneRates.push(after);
        rounds.push({
          seconds: round(seconds),
          itemsPerSec: Math.round((MANY * 20) / seconds),
          ratioToOneTask: round((MANY * 20) / seconds / ((one + after) / 2)),
          p50Ms: Math.round(quantile(latencies, 0.5)),
          p95Ms: Math.round(quantile(latencies, 0.95)),
          cpuSeconds,
        });
        allIds.push(...ids);
        one = after;
      }
      // Where the time went, per task (medians): waiting for a manager, dispatching, running.
      const { rows: [phases] } = await db.query<{ to_manager: number; dispatch: number; to_first: number; run: number }>(
        `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM t.started_at - t.created_at)) * 1000 AS to_manager,
                percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM t.dispatched_at - t.started_at)) * 1000 AS dispatch,
                percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM f.first - t.started_at)) * 1000 AS to_first,
                percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM t.completed_at - f.first)) * 1000 AS run
         FROM fanout_task t
         -- One pass over the tasks' items (a lateral read per task was planned as a scan of the table per task).
         JOIN (SELECT task_id, min(started_at) AS first FROM fanout_item WHERE task_id = ANY($1::uuid[]) GROUP BY task_id) f ON f.task_id = t.id
         WHERE t.id = ANY($1::uuid[])`,
        [allIds],
      );
      print({
        scenario: 'many_small',
        dispatchAtSubmit: DISPATCH_AT_SUBMIT,
        tasks: MANY,
        warmupTasks: MANY_WARMUP,
        itemsPerTask: 20,
        submitters: SUBMITTERS,
        rounds: MANY_ROUNDS,
        // Medians over the rounds; each round's figures in `byRound`.
        ratioToOneTask: medianOf(rounds, (r) => r.ratioToOneTask),
        itemsPerSec: medianOf(rounds, (r) => r.itemsPerSec),
        oneTaskItemsPerSec: Math.round(quantile(oneRates, 0.5)),
        oneTaskRuns: oneRates.map(Math.round),
        p50Ms: medianOf(rounds, (r) => r.p50Ms),
        p95Ms: medianOf(rounds, (r) => r.p95Ms),
        byRound: rounds,
        medianPhasesMs: {
          toManager: Math.round(phases!.to_manager),
          dispatch: Math.round(phases!.dispatch),
          toFirstItem: Math.round(phases!.to_first),
          firstItemToEnd: Math.round(phases!.run),
        },
        ...(firstRoundStatements ? { firstRoundStatements } : {}),
      });
    }

    if (IO_ITEMS > 0 && runs('io_bound')) {
      const ideal = (2 * 50) / 0.02;
      const rounds = [];
      for (let r = 0; r < IO_ROUNDS; r++) {
        const ioId = await submit(IO_ITEMS, 'io', { sleepMs: 20 });
        const io = (await finished([ioId])).get(ioId)!;
        // Where the time went: submit to the first item's start, the items that ended while the
        // manager was still inserting pages and their rate, and the rate from then to the end.
        const { rows: [phase] } = await db.query<{ first_ms: number; dispatch_s: number; during: number; after_s: number }>(
          `SELECT extract(epoch FROM (SELECT min(started_at) FROM fanout_item WHERE task_id = t.id) - t.created_at) * 1000 AS first_ms,
                  extract(epoch FROM t.dispatched_at - t.created_at) AS dispatch_s,
                  (SELECT count(*) FROM fanout_item WHERE task_id = t.id AND finished_at <= t.dispatched_at)::int AS during,
                  extract(epoch FROM t.completed_at - t.dispatched_at) AS after_s
           FROM fanout_task t WHERE t.id = $1`,
          [ioId],
        );
        const rate = IO_ITEMS / (io.latencyMs / 1000);
        rounds.push({
          perSec: Math.round(rate),
          ratioToIdeal: round(rate / ideal),
          firstItemMs: Math.round(phase!.first_ms),
          dispatchSeconds: round(phase!.dispatch_s),
          // (A task small enough to be dispatched at submit has no such phase.)
          ratioWhileDispatching: Number(phase!.dispatch_s) > 0 ? round(phase!.during / Number(phase!.dispatch_s) / ideal) : 0,
          ratioAfterDispatch: round((IO_ITEMS - phase!.during) / Number(phase!.after_s) / ideal),
        });
      }
      print({
        scenario: 'io_bound',
        items: IO_ITEMS,
        itemMs: 20,
        handlers: 2 * 50,
        idealPerSec: ideal,
        perSec: medianOf(rounds, (r) => r.perSec),
        ratioToIdeal: medianOf(rounds, (r) => r.ratioToIdeal),
        ratioWhileDispatching: medianOf(rounds, (r) => r.ratioWhileDispatching),
        ratioAfterDispatch: medianOf(rounds, (r) => r.ratioAfterDispatch),
        byRound: rounds,
      });
    }
  } finally {
    await db.end();
    await api.close();
    await Promise.all(workers.map((w) => w.stop()));
  }
} finally {
  await server.stop();
}
