// `pnpm demo`: a fan-out of 2,000 documents on a local PostgreSQL, with a progress bar.
// Uses DATABASE_URL when set, otherwise an embedded PostgreSQL kept in .data/demo.
import { fileURLToPath } from 'node:url';
import { consoleLogger, isTerminalTaskStatus, type TaskRecord } from '@fanout/core';
import { runMain } from '@fanout/kit';
import { migrationsDir } from '@fanout/prisma-adapter';
import { applyMigrations, localDatabase } from '@fanout/testdb';
import { createAppRuntime } from './db.ts';
import { demoBatch } from './demo.ts';

const bar = (done: number, total: number, width = 30) => {
  const filled = total === 0 ? 0 : Math.round((done / total) * width);
  return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}]`;
};

runMain(async () => {
  const documents = Number(process.env.DEMO_DOCUMENTS ?? 2000);
  const db = await localDatabase('demo', fileURLToPath(new URL('../../../.data/demo', import.meta.url)));
  const app = createAppRuntime({ databaseUrl: db.url, definitions: [demoBatch], logger: consoleLogger('error'), worker: { concurrency: 50 } });
  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      await app.close();
      await db.stop();
    })());
  process.once('SIGINT', () => void stop().then(() => process.exit(130)));
  try {
    await applyMigrations(db.url, [migrationsDir]);
    await app.fanout.start();
    console.log(`database: ${db.clusterDir ? `embedded PostgreSQL in ${db.clusterDir}` : 'DATABASE_URL'}`);

    const started = Date.now();
    const task = await app.fanout.submit(demoBatch, { documents });
    console.log(`task ${task.id}: ${documents} documents, one manager, ${documents} child jobs`);
    const tty = process.stdout.isTTY;
    let current: TaskRecord = task;
    let printedAt = 0;
    for (;;) {
      const t = (await app.fanout.getTask(task.id))!;
      current = t;
      const settled = t.succeeded + t.failed + t.cancelled;
      const total = t.dispatchedAt ? t.total : documents;
      const seconds = (Date.now() - started) / 1000;
      const line = `${bar(settled, total)} ${String(Math.floor((settled / Math.max(total, 1)) * 100)).padStart(3)}%  ${settled}/${total}  ok ${t.succeeded}  failed ${t.failed}  ${Math.round(settled / Math.max(seconds, 0.001))} items/s`;
      const finished = isTerminalTaskStatus(t.status);
      if (tty) {
        process.stdout.write(`\r${line}`);
      } else if (finished || Date.now() - printedAt >= 1000) {
        console.log(line); // no terminal (CI, a pipe): a line a second instead of redrawing one
        printedAt = Date.now();
      }
      if (finished) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    if (tty) process.stdout.write('\n');
    const failures = await app.fanout.listItems(task.id, { status: 'failed', limit: 3 });
    console.log(`${current.status} in ${((Date.now() - started) / 1000).toFixed(1)} s: ${current.succeeded} succeeded, ${current.failed} failed, ${current.cancelled} cancelled`);
    for (const item of failures.rows) console.log(`  failed ${item.key}: ${item.error?.code} - ${item.error?.message}`);
  } finally {
    await stop();
  }
}, 'demo');
