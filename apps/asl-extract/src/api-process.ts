// An ASL API process: HTTP only (submit, read, control, stream, export, dashboard). Run several.
// DATABASE_URL, ASL_TOKENS ("token:tenant,…"), PORT (0 picks a free one), ASL_STORAGE_DIR.
import { serve } from '@hono/node-server';
import { consoleLogger } from '@fanout/core';
import { broadcastRuntimeEvents, TaskEventPublisher, TaskEventSubscriber } from '@fanout/sse-pg';
import { aslApp, parseTokens } from './app.ts';
import { configFromEnv, createAslRuntime } from './runtime.ts';

const config = configFromEnv(process.env, { storageDir: '.data/asl/files' });
const logger = consoleLogger('warn', { pid: process.pid, role: 'api' });
const rt = createAslRuntime({ ...config, logger });
// Cancel and retry-failed happen here: their events are broadcast like the workers' are.
const publisher = new TaskEventPublisher({ connectionString: config.databaseUrl, logger });
broadcastRuntimeEvents(rt.fanout.events, publisher);
await rt.fanout.start({ managers: false, children: false, maintenance: false });
const subscriber = new TaskEventSubscriber({ connectionString: config.databaseUrl, applicationName: `asl-api-${process.pid}`, logger });
await subscriber.start();
const app = aslApp(rt, { tokens: parseTokens(process.env.ASL_TOKENS ?? ''), subscriber });
const server = serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 3000), hostname: process.env.HOST ?? '127.0.0.1' }, (info) =>
  console.log(`LISTENING ${info.port}`),
);
const stop = async () => {
  server.close();
  await subscriber.close();
  await rt.close();
  await publisher.close();
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());
