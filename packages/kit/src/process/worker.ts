import { broadcastRuntimeEvents, TaskEventPublisher } from '@fanout/sse-pg';
import { openApp } from '../app/app-runtime.ts';
import type { AppSpec } from '../app/define-app.ts';
import { ConfigError, loadEnv } from '../config/env.ts';
import type { RunningProcess, RunOptions } from './api.ts';
import { serveMetrics } from '../telemetry/process-metrics.ts';
import { onShutdown } from './shutdown.ts';
import { firstConnection } from './database-url.ts';

/**
 * A worker process: works the app's manager and child jobs, runs the maintenance loop, and
 * broadcasts task events. Needs `DATABASE_URL`; prints `READY <pid>`. On SIGTERM it stops
 * fetching, gives running handlers `FANOUT_DRAIN_MS` to finish, and exits.
 */
export async function runWorker(app: AppSpec<any, any, any>, options: RunOptions = {}): Promise<RunningProcess> {
  const env = loadEnv(app.env ?? {}, options.env ?? process.env);
  const databaseUrl = env.DATABASE_URL;
  if (!databaseUrl) throw new ConfigError([{ variable: 'DATABASE_URL', rule: 'is required for a worker process' }]);
  const metrics = env.FANOUT_METRICS_PORT === undefined ? null : await serveMetrics({ port: env.FANOUT_METRICS_PORT, host: env.FANOUT_METRICS_HOST, service: `fanout-${app.name}` });
  if (metrics) console.log(`METRICS ${metrics.port}`);
  const rt = await openApp(app, { env, role: 'worker', databaseUrl, ...(metrics ? { meterProvider: metrics.meterProvider } : {}) });
  const publisher = new TaskEventPublisher({ connectionString: databaseUrl, logger: rt.ctx.logger });
  broadcastRuntimeEvents(rt.fanout.events, publisher);
  // Its first query: a DATABASE_URL that does not answer is named.
  await firstConnection(databaseUrl, () => rt.fanout.start());
  console.log(`READY ${process.pid}`);
  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      await rt.close();
      await publisher.close();
      await metrics?.close();
    })());
  if (options.signals ?? true) onShutdown(stop);
  return { stop };
}
