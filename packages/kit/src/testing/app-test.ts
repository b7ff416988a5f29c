import { fileURLToPath } from 'node:url';
import { createTestDatabase, startProcess, type PodProcess, type TestDatabase, type TestPostgres } from '@fanout/testdb';
import { appMigrations, openApp, type AppRuntime } from '../app/app-runtime.ts';
import type { AppServices, AppSpec } from '../app/define-app.ts';
import { loadEnv, type EnvShape } from '../config/env.ts';
import type { AppPrismaClient } from '../database/prisma-runtime.ts';
import { apiPrefix } from '../http/app-http.ts';
import { fuzzOpenApi, type FuzzOptions } from './fuzz.ts';

// From the sources (tests, the dev-source condition) or from the build.
const entry = fileURLToPath(new URL(import.meta.url.endsWith('.ts') ? '../process/entry.ts' : './process/entry.js', import.meta.url));

/** The tokens every app test has: tenant `team-a`, tenant `team-b`, and an operator (tenant `ops`). */
export const TEST_TOKEN = { a: 'test-token-team-a', b: 'test-token-team-b', ops: 'test-token-operator' } as const;

/** `FANOUT_TOKENS` of an app test. */
export const TEST_TOKENS = `${TEST_TOKEN.a}:team-a,${TEST_TOKEN.b}:team-b,${TEST_TOKEN.ops}:ops:operator`;

/** Settings that make recoveries quick enough for a test (leases, maintenance, supervision). */
export const TEST_ENV: Record<string, string | number> = {
  FANOUT_TOKENS: TEST_TOKENS,
  PORT: 0,
  FANOUT_LEASE_MS: 3000,
  FANOUT_MAINTENANCE_MS: 500,
  FANOUT_ANNOUNCE_GRACE_MS: 2000,
  FANOUT_CONTROL_POLL_MS: 250,
  FANOUT_SUPERVISE_SECONDS: 2,
};

export interface AppTest<P extends AppPrismaClient, E extends EnvShape, S extends AppServices> extends AsyncDisposable {
  db: TestDatabase;
  /** The app in this process, on the same database (submits and reads; works no jobs). */
  rt: AppRuntime<P, E, S>;
  /** The environment the app's processes get (the test's own variables and `env`). */
  env: Record<string, string | number>;
  /** The API process's base URL once started. */
  readonly apiUrl: string | null;
  /** Starts an API process (its own OS process) and waits until it listens. */
  api(env?: Record<string, string | number>): Promise<PodProcess & { url: string }>;
  /** Starts worker processes and waits until they work. */
  workers(count: number, env?: Record<string, string | number>): Promise<PodProcess[]>;
  /** A request to the API process under the app's prefix, with `TEST_TOKEN.a` unless told otherwise (null: none). */
  call(method: string, path: string, options?: { token?: string | null; body?: unknown; headers?: Record<string, string> }): Promise<Response>;
  /**
   * `fuzzOpenApi` over the API process's own document: tenant B (`TEST_TOKEN.b`) sends most
   * requests, tenant A's `secrets` must never reach it, the operator and no one too; the seed is
   * `FANOUT_FUZZ_SEED` when set.
   */
  fuzz(options: Pick<FuzzOptions, 'secrets' | 'pathValues' | 'queryValues' | 'runs' | 'skip'>): Promise<{ operations: number; requests: number }>;
}

/**
 * An app on a fresh database with its migrations, the app itself in this process, and API and
 * worker processes (real OS processes, through the kit's own runners) started on demand. The
 * database is made on the shared test server, or on `server` (e.g. one the test restarts).
 */
export async function appTest<P extends AppPrismaClient, E extends EnvShape, S extends AppServices>(
  app: AppSpec<P, E, S>,
  options: { env?: Record<string, string | number>; server?: TestPostgres } = {},
): Promise<AppTest<P, E, S>> {
  const db = await createTestDatabase({ migrations: appMigrations(app), ...(options.server ? { server: options.server } : {}) });
  const env = { ...TEST_ENV, ...options.env };
  const stringEnv = Object.fromEntries(Object.entries({ ...process.env, ...env, DATABASE_URL: db.url }).map(([k, v]) => [k, v === undefined ? undefined : String(v)]));
  let rt: AppRuntime<P, E, S>;
  try {
    rt = await openApp(app, { env: loadEnv(app.env ?? ({} as E), stringEnv), role: 'api', databaseUrl: db.url });
    // The test's own runtime submits and reads; it is not a process of the app, so it does not report itself.
    await rt.fanout.start({ managers: false, children: false, maintenance: false, presence: false });
  } catch (error) {
    await db.drop();
    throw error;
  }
  const pods: PodProcess[] = [];
  let apiUrl: string | null = null;
  const start = (role: 'api' | 'worker', extra: Record<string, string | number>) =>
    startProcess(entry, role === 'api' ? 'LISTENING' : 'READY', db.url, { ...env, ...extra, FANOUT_ROLE: role, FANOUT_APP_MODULE: app.module });
  return {
    db,
    rt,
    env,
    get apiUrl() {
      return apiUrl;
    },
    async api(extra = {}) {
      const pod = await start('api', extra);
      pods.push(pod);
      const port = Number(pod.lines.find((l) => l.startsWith('LISTENING'))!.split(' ')[1]);
      apiUrl = `http://127.0.0.1:${port}`;
      return { ...pod, url: apiUrl };
    },
    async workers(count, extra = {}) {
      const started = await Promise.all(Array.from({ length: count }, () => start('worker', extra)));
      pods.push(...started);
      return started;
    },
    async call(method, path, callOptions = {}) {
      if (!apiUrl) throw new Error('start the API process first: await t.api()');
      const headers: Record<string, string> = { ...callOptions.headers };
      if (callOptions.token !== null) headers.authorization = `Bearer ${callOptions.token ?? TEST_TOKEN.a}`;
      if (callOptions.body !== undefined) headers['content-type'] = 'application/json';
      return fetch(`${apiUrl}${apiPrefix(app.name)}${path}`, {
        method,
        headers,
        ...(callOptions.body !== undefined ? { body: JSON.stringify(callOptions.body) } : {}),
      });
    },
    async fuzz(fuzzOptions) {
      if (!apiUrl) throw new Error('start the API process first: await t.api()');
      return fuzzOpenApi({
        ...fuzzOptions,
        baseUrl: apiUrl,
        documentPath: `${apiPrefix(app.name)}/openapi.json`,
        tokens: { mine: TEST_TOKEN.b, other: TEST_TOKEN.a, operator: TEST_TOKEN.ops },
        ...(process.env.FANOUT_FUZZ_SEED ? { seed: Number(process.env.FANOUT_FUZZ_SEED) } : {}),
      });
    },
    async [Symbol.asyncDispose]() {
      await Promise.all(pods.map((p) => p.stop()));
      await rt.close({ graceMs: 1000 });
      await db.drop();
    },
  };
}

/** The test handle of an app: `AppTestOf<typeof app>`. */
export type AppTestOf<A> = A extends AppSpec<infer P, infer E, infer S> ? AppTest<P, E, S> : never;
