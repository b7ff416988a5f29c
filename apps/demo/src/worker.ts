// A demo worker process: works the demo fan-out's manager and child jobs until SIGTERM.
// Run several against one database: DATABASE_URL=postgres://… pnpm --filter @fanout/demo worker
import { consoleLogger } from '@fanout/core';
import { migrationsDir } from '@fanout/prisma-adapter';
import { applyMigrations } from '@fanout/testdb';
import { onShutdown } from '@fanout/kit';
import { createAppRuntime } from './db.ts';
import { demoBatch } from './demo.ts';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  console.error('DATABASE_URL is required: workers share one database');
  process.exit(2);
}
await applyMigrations(databaseUrl, [migrationsDir]);
const app = createAppRuntime({ databaseUrl, definitions: [demoBatch], logger: consoleLogger('info', { pid: process.pid }) });
await app.fanout.start();
console.log(`worker ${process.pid} working ${demoBatch.managerQueue} and ${demoBatch.childQueue}`);
onShutdown(() => app.close());
