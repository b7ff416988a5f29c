// Part of `pnpm bench`: how long after the last child's commit does an SSE client, connected to
// an API process, receive the completed event of a task whose children ran in a worker process?
// Prints one JSON line: {"scenario":"sse_completion_latency","tasks","p50Ms","p95Ms","maxMs"}.
import { migrationsDir } from '@fanout/prisma-adapter';
import { collectEventStream } from '@fanout/sse-pg';
import pg from 'pg';
import { startApi, startWorker } from '@fanout/runtime-tests/harness';
import { benchServer } from './server.ts';

const TASKS = Number(process.env.BENCH_LATENCY_TASKS ?? 60);
const server = await benchServer();
try {
  const url = await server.database('bench_latency', [migrationsDir]);
  const [api, worker] = await Promise.all([startApi(url, 'bench'), startWorker(url, { FANOUT_CONCURRENCY: 20 })]);
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  const samples: number[] = [];
  try {
    for (let i = 0; i < TASKS; i++) {
      const res = await fetch(`http://127.0.0.1:${api.port}/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-tenant': 'bench' },
        body: JSON.stringify({ count: 20, item: { sleepMs: 150 } }),
      });
      const { id } = (await res.json()) as { id: string };
      const events = await fetch(`http://127.0.0.1:${api.port}/tasks/${id}/events`, { headers: { 'x-tenant': 'bench' } });
      const sse = collectEventStream(events.body!);
      while (!sse.messages.some((m) => m.event === 'task.completed')) await new Promise((r) => setTimeout(r, 1));
      const receivedAt = Date.now();
      await sse.cancel();
      // completed_at is set by the statement that settled the last child, just before its commit;
      // the database and this process read the same machine clock.
      const { rows } = await db.query<{ ms: number }>(`SELECT (extract(epoch FROM completed_at) * 1000)::float8 AS ms FROM fanout_task WHERE id = $1`, [id]);
      if (sse.messages[0]?.event === 'task.completed') continue; // finished before the client connected: not a live sample
      samples.push(receivedAt - rows[0]!.ms);
    }
  } finally {
    await db.end();
    await Promise.all([api.stop(), worker.stop()]);
  }
  samples.sort((a, b) => a - b);
  const at = (q: number) => Math.round(samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]! * 10) / 10;
  console.log(JSON.stringify({ scenario: 'sse_completion_latency', tasks: samples.length, p50Ms: at(0.5), p95Ms: at(0.95), maxMs: at(1) }));
} finally {
  await server.stop();
}
