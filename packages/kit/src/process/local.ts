import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { broadcastRuntimeEvents, TaskEventPublisher, TaskEventSubscriber } from '@fanout/sse-pg';
import { applyMigrations, localDatabase } from '@fanout/testdb';
import { appMigrations, openApp, type AppRuntime } from '../app/app-runtime.ts';
import type { AppSpec, LocalService } from '../app/define-app.ts';
import { parseTokens, tokenAuthenticator, withToken } from '../auth/tokens.ts';
import { loadEnv } from '../config/env.ts';
import { apiPrefix, appHttp } from '../http/app-http.ts';
import type { RunningProcess } from './api.ts';
import { serveMetrics, type MetricsEndpoint } from '../telemetry/process-metrics.ts';
import { listen, type Listening } from './serve.ts';
import { onShutdown } from './shutdown.ts';

export interface LocalOptions {
  /** Where local data lives between runs (the embedded database, the token, app files). */
  dataDir: string;
  /** @default process.env */
  env?: Record<string, string | undefined>;
  /** The tenant of the local token. @default 'local' */
  tenant?: string;
  /** Handle SIGINT/SIGTERM. @default true */
  signals?: boolean;
  /** Where the start-up report goes. @default console.log */
  print?: (line: string) => void;
}

export interface LocalApp {
  name: string;
  title: string;
  consoleUrl: string;
  apiUrl: string;
}

/** The local operator token, kept in the data folder (readable by its owner only). */
function localToken(dataDir: string): string {
  const file = join(dataDir, 'local-token');
  if (!existsSync(file)) writeFileSync(file, randomBytes(24).toString('base64url'), { mode: 0o600 });
  return readFileSync(file, 'utf8').trim();
}

/**
 * Runs apps on one machine, in this process: one database (an embedded PostgreSQL in
 * `dataDir` unless `DATABASE_URL` is set) with every app's migrations, each app's sample data
 * and local services, an API and a worker per app, each app on its own port (`PORT`, or the
 * app's `local.port`, the next ones counting up). Prints each console's URL with a local
 * operator token.
 */
export async function runLocal(apps: readonly AppSpec<any, any, any>[], options: LocalOptions): Promise<RunningProcess & { apps: LocalApp[] }> {
  const source = options.env ?? process.env;
  const print = options.print ?? ((line: string) => console.log(line));
  const tenant = options.tenant ?? 'local';
  const common = loadEnv({}, source);
  mkdirSync(options.dataDir, { recursive: true });
  const token = localToken(options.dataDir);
  const tokens = withToken(common.FANOUT_TOKENS ?? parseTokens(''), token, { tenant, role: 'operator' });
  const authenticate = tokenAuthenticator(tokens);

  const db = await localDatabase('fanout', options.dataDir, common.DATABASE_URL);
  const services: LocalService[] = [];
  const runtimes: AppRuntime<any, any, any>[] = [];
  const servers: Listening[] = [];
  let publisher: TaskEventPublisher | null = null;
  let subscriber: TaskEventSubscriber | null = null;
  let metrics: MetricsEndpoint | null = null;
  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      await Promise.all(servers.map((s) => s.close()));
      await subscriber?.close();
      await Promise.all(runtimes.map((rt) => rt.close()));
      await publisher?.close();
      await Promise.all(services.map((s) => s.close()));
      await metrics?.close();
      await db.stop();
    })());

  try {
    await applyMigrations(db.url, [...new Set(apps.flatMap(appMigrations))]);
    publisher = new TaskEventPublisher({ connectionString: db.url });
    subscriber = new TaskEventSubscriber({ connectionString: db.url, applicationName: 'fanout-local-listen' });
    await subscriber.start();
    print(`database:  ${db.clusterDir ? `embedded PostgreSQL in ${db.clusterDir}` : 'DATABASE_URL'}`);
    if (common.FANOUT_METRICS_PORT !== undefined) {
      metrics = await serveMetrics({ port: common.FANOUT_METRICS_PORT, host: common.FANOUT_METRICS_HOST, service: 'fanout-local' });
      print(`metrics:   ${metrics.url} (Prometheus)`);
    }
    const started: LocalApp[] = [];
    for (const [index, app] of apps.entries()) {
      const own = (await app.local?.services?.()) ?? [];
      services.push(...own);
      const env = loadEnv(app.env ?? {}, { ...Object.assign({}, ...own.map((s) => s.env ?? {})), ...source, DATABASE_URL: db.url, FANOUT_DATA_DIR: options.dataDir });
      const rt = await openApp(app, { env, role: 'local', databaseUrl: db.url, ...(metrics ? { meterProvider: metrics.meterProvider } : {}) });
      runtimes.push(rt);
      broadcastRuntimeEvents(rt.fanout.events, publisher);
      await rt.fanout.start({ role: 'local' });
      const seeded = await app.local?.seed?.(rt.ctx, tenant);
      const port = common.PORT === undefined ? (app.local?.port ?? 3000 + index) : common.PORT === 0 ? 0 : common.PORT + index;
      const server = await listen(appHttp(rt, { authenticate, subscriber }), { port, host: common.HOST });
      servers.push(server);
      const entry = { name: app.name, title: app.title, consoleUrl: `${server.url}/#token=${token}`, apiUrl: `${server.url}${apiPrefix(app.name)}` };
      started.push(entry);
      print('');
      print(app.title);
      print(`  console:  ${entry.consoleUrl}`);
      print(`  API:      ${entry.apiUrl}  (Authorization: Bearer ${token}; OpenAPI at ${entry.apiUrl}/openapi.json)`);
      for (const service of own) if (service.describe) print(`  ${service.describe}`);
      if (seeded) print(`  ${seeded}`);
    }
    print('');
    print(`Ctrl-C stops; data stays in ${options.dataDir}.`);
    if (options.signals ?? true) {
      onShutdown(async () => {
        print('stopping: letting running items finish, then the database…');
        await stop();
        print('stopped.');
      });
    }
    return { stop, apps: started };
  } catch (error) {
    await stop().catch(() => {});
    throw error;
  }
}
