import type { Logger } from '@fanout/core';
import { route } from '@fanout/http';
import { createTestDatabase, waitFor, type TestDatabase } from '@fanout/testdb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { appHttp, appMigrations, defineApp, listen, loadEnv, openApp, parseTokens, tokenAuthenticator, type AppRuntime, type Listening } from '../src/index.ts';
import { TEST_ENV, TEST_TOKEN, TEST_TOKENS } from '../src/testing/index.ts';
import flaky, { FLAKY_SECRET } from './fixtures/flaky-app.ts';

// An app that plugs in a logger of its own, one that masks nothing (a plain object writing what it
// is given): the kit's own lines, the HTTP layer's and the app's through `ctx.logger` reach it with
// credentials masked, as the runtime's do.
const PASSWORD = 'hunter2-plain-logger';
const written: string[] = [];
const plain: Logger = {
  debug: (message, data) => void written.push(JSON.stringify({ level: 'debug', message, data })),
  info: (message, data) => void written.push(JSON.stringify({ level: 'info', message, data })),
  warn: (message, data) => void written.push(JSON.stringify({ level: 'warn', message, data })),
  error: (message, data) => void written.push(JSON.stringify({ level: 'error', message, data })),
  child: () => plain,
};

const app = defineApp({
  ...flaky,
  setup: (ctx) => {
    ctx.logger.info('connecting to the upstream', { url: `postgres://app:${PASSWORD}@db.internal/x`, authorization: `Bearer ${FLAKY_SECRET}` });
    return flaky.setup(ctx);
  },
  routes: () => [
    route({
      method: 'get',
      path: '/broken',
      summary: 'A route whose dependency fails',
      responses: { 200: z.object({ ok: z.boolean() }) },
      handler: () => {
        throw new Error(`could not reach postgres://app:${PASSWORD}@db.internal/x`);
      },
    }),
  ],
});

let db: TestDatabase;
let rt: AppRuntime<any, any, any>;
let server: Listening;

beforeAll(async () => {
  db = await createTestDatabase({ migrations: appMigrations(app) });
  const env = loadEnv({}, { ...Object.fromEntries(Object.entries(TEST_ENV).map(([k, v]) => [k, String(v)])), DATABASE_URL: db.url });
  rt = await openApp(app, { env, role: 'api', databaseUrl: db.url, logger: plain });
  server = await listen(appHttp(rt, { authenticate: tokenAuthenticator(parseTokens(TEST_TOKENS)) }), { port: 0, host: '127.0.0.1' });
});

afterAll(async () => {
  await server?.close();
  await rt?.close({ graceMs: 1000 });
  await db?.drop();
});

describe('a logger the app plugs in', () => {
  it("receives the app's, the kit's and the HTTP layer's lines with credentials masked", async () => {
    const res = await fetch(`${server.url}/api/flaky/broken`, { headers: { authorization: `Bearer ${TEST_TOKEN.a}` } });
    expect(res.status).toBe(500);
    const body = JSON.stringify(await res.json());
    expect(body).not.toContain(PASSWORD);
    await waitFor(() => written.some((l) => l.includes('could not reach')), { message: "the 500's line" });
    const setupLine = written.find((l) => l.includes('connecting to the upstream'));
    expect(setupLine).toBeDefined();
    expect(setupLine).toContain('db.internal');
    const text = written.join('\n');
    expect(text).not.toContain(PASSWORD);
    expect(text).not.toContain(FLAKY_SECRET);
  });
});
