import { broadcastRuntimeEvents, TaskEventPublisher, TaskEventSubscriber } from '@fanout/sse-pg';
import { openApp } from '../app/app-runtime.ts';
import type { AppSpec } from '../app/define-app.ts';
import { tokenAuthenticator } from '../auth/tokens.ts';
import { ConfigError, loadEnv } from '../config/env.ts';
import { appHttp } from '../http/app-http.ts';
import { serveMetrics } from '../telemetry/process-metrics.ts';
import { listen } from './serve.ts';
import { onShutdown } from './shutdown.ts';
import { firstConnection } from './database-url.ts';

export interface RunOptions {
  /** Where the configuration comes from. @default process.env */
  env?: Record<string, string | undefined>;
  /** Handle SIGINT/SIGTERM (drain, then exit). @default true */
  signals?: boolean;
}

export interface RunningProcess {
  /** The HTTP address of an API process. */
  url?: string;
  /** Drains and closes everything this process opened. */
  stop(): Promise<void>;
}

/**
 * An API process: serves the app's HTTP surface (submit, read, control, live events, exports,
 * console) and runs no jobs. Needs `DATABASE_URL` and `FANOUT_TOKENS`; prints `LISTENING <port>`.
 * Run as many as you like behind a load balancer.
 */
export async function runApi(app: AppSpec<any, any, any>, options: RunOptions = {}): Promise<RunningProcess> {
  const env = loadEnv(app.env ?? {}, options.env ?? process.env);
  const databaseUrl = env.DATABASE_URL;
  if (!databaseUrl) throw new ConfigError([{ variable: 'DATABASE_URL', rule: 'is required for an API process' }]);
  if (!env.FANOUT_TOKENS) throw new ConfigError([{ variable: 'FANOUT_TOKENS', rule: 'is required for an API process (token:tenant[:role],…)' }]);
  const metrics = env.FANOUT_METRICS_PORT === undefined ? null : await serveMetrics({ port: env.FANOUT_METRICS_PORT, host: env.FANOUT_METRICS_HOST, service: `fanout-${app.name}` });
  if (metrics) console.log(`METRICS ${metrics.port}`);
  const rt = await openApp(app, { env, role: 'api', databaseUrl, ...(metrics ? { meterProvider: metrics.meterProvider } : {}) });
  const { logger } = rt.ctx;
  // Cancel and retry-failed happen here: their events are broadcast like the workers' are.
  const publisher = new TaskEventPublisher({ connectionString: databaseUrl, logger });
  broadcastRuntimeEvents(rt.fanout.events, publisher);
  // Its first query: a DATABASE_URL that does not answer is named.
  await firstConnection(databaseUrl, () => rt.fanout.start({ managers: false, children: false, maintenance: false, role: 'api' }));
  const subscriber = new TaskEventSubscriber({ connectionString: databaseUrl, applicationName: `fanout-${app.name}-listen-${process.pid}`, logger });
  await subscriber.start();
  let draining = false;
  const http = appHttp(rt, { authenticate: tokenAuthenticator(env.FANOUT_TOKENS), subscriber, draining: () => draining });
  const server = await listen(http, { port: env.PORT ?? 3000, host: env.HOST });
  console.log(`LISTENING ${server.port}`);
  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      draining = true;
      await server.close();
      await subscriber.close();
      await rt.close();
      await publisher.close();
      await metrics?.close();
    })());
  if (options.signals ?? true) onShutdown(stop);
  return { url: server.url, stop };
}
