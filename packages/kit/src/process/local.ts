import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { broadcastRuntimeEvents, TaskEventPublisher, TaskEventSubscriber } from '@fanout/sse-pg';
import { applyMigrations, localDatabase, type LocalDatabase } from '@fanout/testdb';
import { appMigrations, openApp, type AppRuntime } from '../app/app-runtime.ts';
import type { AppSpec, LocalService } from '../app/define-app.ts';
import { parseTokens, tokenAuthenticator, withToken } from '../auth/tokens.ts';
import { ConfigError, loadEnv } from '../config/env.ts';
import { apiPrefix, appHttp } from '../http/app-http.ts';
import type { RunningProcess } from './api.ts';
import { serveMetrics, type MetricsEndpoint } from '../telemetry/process-metrics.ts';
import { firstConnection } from './database-url.ts';
import { lockRun } from './run-lock.ts';
import { listen, type Listening } from './serve.ts';
import { onShutdown } from './shutdown.ts';

export interface LocalOptions {
  /** Where local data lives between runs (the embedded database, the token, app files); `FANOUT_DATA_DIR`, when set, wins. */
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

/** Why `port` (of `owner`, moved by `variable`) cannot be listened on at `host`, as the operator fixes it. */
function listenProblem(error: NodeJS.ErrnoException, port: number, host: string, owner: string, variable: string): Error {
  return new Error(
    error.code === 'EADDRINUSE' ? `port ${port} (${owner}) is in use by another program: stop it, or set ${variable} to another port`
    : error.code === 'EACCES' ? `port ${port} (${owner}) needs privileges this process does not have: set ${variable} to a port above 1023`
    : error.code === 'ENOTFOUND' || error.code === 'EADDRNOTAVAIL' ? `HOST: cannot listen on ${JSON.stringify(host)} (${error.code})`
    : `port ${port} (${owner}): ${error.message}`,
    { cause: error },
  );
}

/** Fails with `listenProblem` when `port` cannot be listened on. */
async function checkPort(port: number, host: string, owner: string, variable: string): Promise<void> {
  if (port === 0) return;
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', (error: NodeJS.ErrnoException) => reject(listenProblem(error, port, host, owner, variable)));
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}

/**
 * Runs apps on one machine, in this process: one database (an embedded PostgreSQL in
 * `dataDir` unless `DATABASE_URL` is set) with every app's migrations, each app's sample data
 * and local services, an API and a worker per app, each app on its own port (`PORT`, or the
 * app's `local.port`, the next ones counting up). Prints each console's URL with a local
 * operator token.
 *
 * One run per data folder (`FANOUT_DATA_DIR` when set, else `dataDir`): a second one fails at once,
 * naming the first. The ports are checked before anything starts. A SIGINT or SIGTERM during
 * start-up lets the step under way finish (a sample half loaded would stay so), then stops.
 */
export async function runLocal(apps: readonly AppSpec<any, any, any>[], options: LocalOptions): Promise<RunningProcess & { apps: LocalApp[] }> {
  const source = options.env ?? process.env;
  const print = options.print ?? ((line: string) => console.log(line));
  const tenant = options.tenant ?? 'local';
  const common = loadEnv({}, source);
  const dataDir = source.FANOUT_DATA_DIR ? resolve(source.FANOUT_DATA_DIR) : options.dataDir;
  const owner = (app: AppSpec<any, any, any>) => `${app.title}'s console and API`;
  const ports = apps.map((app, index) => (common.PORT === undefined ? (app.local?.port ?? 3000 + index) : common.PORT === 0 ? 0 : common.PORT + index));
  if (common.PORT !== undefined && common.PORT + apps.length - 1 > 65535) {
    throw new ConfigError([{ variable: 'PORT', rule: `must leave room for ${apps.length} apps on the ports from it up: at most ${65536 - apps.length} (got ${common.PORT})` }]);
  }
  // Two apps given one port (`local.port`): said as it is, not as a port "in use by another program".
  for (const [index, port] of ports.entries()) {
    const first = ports.indexOf(port);
    if (port !== 0 && first < index) {
      throw new ConfigError([{ variable: `local.port of ${apps[index]!.name}`, rule: `must differ from ${apps[first]!.name}'s (both ${port})` }]);
    }
  }
  if (common.FANOUT_METRICS_PORT && ports.includes(common.FANOUT_METRICS_PORT)) {
    throw new ConfigError([{ variable: 'FANOUT_METRICS_PORT', rule: `must differ from the apps' ports (${ports.join(', ')}) (got ${common.FANOUT_METRICS_PORT})` }]);
  }
  mkdirSync(dataDir, { recursive: true });
  const lock = lockRun(dataDir);

  const services: LocalService[] = [];
  const runtimes: AppRuntime<any, any, any>[] = [];
  const servers: Listening[] = [];
  let db: LocalDatabase | null = null;
  let publisher: TaskEventPublisher | null = null;
  let subscriber: TaskEventSubscriber | null = null;
  let metrics: MetricsEndpoint | null = null;
  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      try {
        await Promise.all(servers.map((s) => s.close()));
        await subscriber?.close();
        await Promise.all(runtimes.map((rt) => rt.close()));
        await publisher?.close();
        await Promise.all(services.map((s) => s.close()));
        await metrics?.close();
        await db?.stop();
      } finally {
        lock.release();
      }
    })());

  // A signal during start-up is heard from the start (below): the step under way finishes, then all stops.
  const interrupted = new AbortController();
  const step = () => interrupted.signal.throwIfAborted();

  const start = async (): Promise<LocalApp[]> => {
    for (const [index, app] of apps.entries()) await checkPort(ports[index]!, common.HOST, owner(app), 'PORT');
    if (common.FANOUT_METRICS_PORT !== undefined) await checkPort(common.FANOUT_METRICS_PORT, common.FANOUT_METRICS_HOST, 'the metrics listener', 'FANOUT_METRICS_PORT');
    step();
    const token = localToken(dataDir);
    const tokens = withToken(common.FANOUT_TOKENS ?? parseTokens(''), token, { tenant, role: 'operator' });
    const authenticate = tokenAuthenticator(tokens);
    db = await localDatabase('fanout', dataDir, common.DATABASE_URL);
    step();
    const migrate = () => applyMigrations(db!.url, [...new Set(apps.flatMap(appMigrations))]);
    await (db.embedded ? migrate() : firstConnection(db.url, migrate));
    step();
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
      step();
      const own = (await app.local?.services?.()) ?? [];
      services.push(...own);
      step();
      const env = loadEnv(app.env ?? {}, { ...Object.assign({}, ...own.map((s) => s.env ?? {})), ...source, DATABASE_URL: db.url, FANOUT_DATA_DIR: dataDir });
      const rt = await openApp(app, { env, role: 'local', databaseUrl: db.url, ...(metrics ? { meterProvider: metrics.meterProvider } : {}) });
      runtimes.push(rt);
      broadcastRuntimeEvents(rt.fanout.events, publisher);
      await rt.fanout.start({ role: 'local' });
      step();
      const seeded = await app.local?.seed?.(rt.ctx, tenant);
      step();
      const server = await listen(appHttp(rt, { authenticate, subscriber }), { port: ports[index]!, host: common.HOST }).catch((error: NodeJS.ErrnoException) => {
        throw listenProblem(error, ports[index]!, common.HOST, owner(app), 'PORT'); // taken since the check at start-up
      });
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
    step();
    print('');
    print(`Ctrl-C stops; data stays in ${dataDir}.`);
    return started;
  };

  const starting = start();
  if (options.signals ?? true) {
    onShutdown(async () => {
      print('stopping: letting running items finish, then the database…');
      interrupted.abort();
      const failure = await starting.then(
        () => null,
        (error: unknown) => error,
      );
      await stop();
      // A start-up that failed by itself meanwhile (not by the stop) is still said.
      if (failure !== null && failure !== interrupted.signal.reason) print(`start-up failed: ${(failure as Error)?.message ?? String(failure)}`);
      print('stopped.');
    }, print);
  }
  try {
    return { stop, apps: await starting };
  } catch (error) {
    await stop().catch(() => {});
    // Stopped by a signal: the handler ends the process once all is stopped.
    if (interrupted.signal.aborted) return { stop, apps: [] };
    throw error;
  }
}
