// An ASL worker process: works manager and child jobs, broadcasts task events. Run several.
// DATABASE_URL, ASL_STORAGE_DIR, ASL_LLM_* (see README), ASL_WORKER_CONCURRENCY.
import { consoleLogger } from '@fanout/core';
import { broadcastRuntimeEvents, TaskEventPublisher } from '@fanout/sse-pg';
import { configFromEnv, createAslRuntime } from './runtime.ts';

const config = configFromEnv(process.env, { storageDir: '.data/asl/files' });
const logger = consoleLogger('warn', { pid: process.pid, role: 'worker' });
const rt = createAslRuntime({ ...config, logger });
const publisher = new TaskEventPublisher({ connectionString: config.databaseUrl, logger });
broadcastRuntimeEvents(rt.fanout.events, publisher);
await rt.fanout.start();
console.log(`READY ${process.pid} extractor=${rt.extractor.model}`);
const stop = async () => {
  await rt.close();
  await publisher.close();
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());
