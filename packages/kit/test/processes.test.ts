import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, waitFor } from '@fanout/testdb';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { runLocal } from '../src/index.ts';
import { appTest, TEST_ENV } from '../src/testing/index.ts';
import echo from './fixtures/echo-app.ts';

const entry = fileURLToPath(new URL('../src/process/entry.ts', import.meta.url));

/** Runs the kit's process entry for the echo app and collects what it prints until it exits. */
function runEntry(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--conditions=dev-source', '--no-warnings', entry], {
    env: { PATH: process.env.PATH, FANOUT_APP_MODULE: echo.module, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => (stdout += c));
  child.stderr.on('data', (c) => (stderr += c));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

describe('process runners', () => {
  it('an API and a worker process run an app: its routes, console, health at the root, and a task end to end', async () => {
    await using t = await appTest(echo);
    const api = await t.api();
    await t.workers(1);
    const res = await t.call('POST', '/tasks', { body: { input: { count: 20 } } });
    expect(res.status).toBe(202);
    const { id } = (await res.json()) as { id: string };
    const task = await waitFor(async () => {
      const x = (await (await t.call('GET', `/tasks/${id}`)).json()) as { status: string; succeeded: number; summary: string };
      return x.status === 'completed' ? x : null;
    }, { message: 'the echo task' });
    expect(task).toMatchObject({ succeeded: 20, summary: '20 echoes' });
    expect(await (await t.call('GET', '/ping')).json()).toEqual({ pong: true });
    expect((await t.call('GET', `/tasks/${id}/results.csv`)).status).toBe(200);
    // Health at the root too (load balancers probe /healthz), and the console at /.
    expect(await (await fetch(`${api.url}/healthz`)).json()).toEqual({ ok: true });
    expect((await fetch(`${api.url}/readyz`)).status).toBe(200);
    const page = await fetch(`${api.url}/`);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(await page.text()).toContain('"apiBase":"/api/echo"');
    // One document lists every served route: the app's own and its exports included.
    const doc = (await (await t.call('GET', '/openapi.json', { token: null })).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/api/echo/ping', '/api/echo/tasks/{id}/results.csv', '/api/echo/tasks/{id}/results.json', '/healthz', '/readyz']));
    // Once retention deleted the task's items (its row marked as the first batch marks it), its
    // results are gone too: 410, not an empty export.
    await t.rt.db.pool.query('UPDATE fanout_task SET purged_at = now() WHERE id = $1', [id]);
    for (const path of ['results.csv', 'results.json']) {
      const gone = await t.call('GET', `/tasks/${id}/${path}`);
      expect(gone.status, path).toBe(410);
      expect(((await gone.json()) as { error: { code: string } }).error.code).toBe('purged');
    }
  });

  it('a worker stopped with SIGTERM lets its running items finish and settle before it exits', async () => {
    await using t = await appTest(echo, { env: { ECHO_SLEEP_MS: 1500, FANOUT_WORKER_CONCURRENCY: 5 } });
    await t.api();
    const [worker] = await t.workers(1);
    const { id } = (await (await t.call('POST', '/tasks', { body: { input: { count: 5 } } })).json()) as { id: string };
    await waitFor(async () => (await t.rt.fanout.store.itemCounts(id)).running === 5, { message: 'five items running' });
    worker!.kill('SIGTERM');
    expect(await worker!.exited).toBe(0);
    // Everything it had started was settled by it (no lease left to lapse, no second attempt).
    const counts = await t.rt.fanout.store.itemCounts(id);
    expect(counts).toMatchObject({ succeeded: 5, running: 0 });
    const items = await t.rt.fanout.listItems(id, { limit: 10 });
    expect(items.rows.map((i) => i.attempts)).toEqual([1, 1, 1, 1, 1]);
    expect((await t.rt.fanout.store.workers(['kit_echo'], 60_000)).filter((w) => w.role === 'worker')).toEqual([]); // it left the list
  });

  it('a process with a configuration mistake says which variable and which rule, in one line, and exits 1', async () => {
    const noTokens = await runEntry({ FANOUT_ROLE: 'api', DATABASE_URL: 'postgres://u:p@127.0.0.1:1/x' });
    expect(noTokens.code).toBe(1);
    expect(noTokens.stderr.trim()).toBe('fanout: invalid configuration: FANOUT_TOKENS: is required for an API process (token:tenant[:role],…)');
    const bad = await runEntry({ FANOUT_ROLE: 'worker', DATABASE_URL: 'http://nope', FANOUT_WORKER_CONCURRENCY: '0', ECHO_SLEEP_MS: 'soon' });
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    expect(bad.stderr).toContain('DATABASE_URL: must be a postgres:// or postgresql:// connection URL');
    expect(bad.stderr).toContain('FANOUT_WORKER_CONCURRENCY: must be an integer from 1 to 10000 (got "0")');
    expect(bad.stderr).toContain('ECHO_SLEEP_MS: must be an integer >= 0 (got "soon")');
    const role = await runEntry({ FANOUT_ROLE: 'boss' });
    expect(role.stderr.trim()).toBe('fanout: FANOUT_ROLE: must be api, worker or migrate (got "boss")');
    // A DATABASE_URL that does not answer is named, with its server and never its password.
    const away = await runEntry({ FANOUT_ROLE: 'worker', DATABASE_URL: 'postgres://someone:hunter2@127.0.0.1:1/x' });
    expect(away.code).toBe(1);
    expect(away.stderr.trim()).toBe('fanout: DATABASE_URL (someone@127.0.0.1:1/x): connect ECONNREFUSED 127.0.0.1:1');
    await using db = await createTestDatabase({ name: 'named_url' });
    const missing = new URL(db.url);
    missing.pathname = '/no_such_database';
    const nowhere = await runEntry({ FANOUT_ROLE: 'migrate', DATABASE_URL: missing.href });
    expect(nowhere.code).toBe(1);
    expect(nowhere.stderr.trim()).toBe(`fanout: DATABASE_URL (${decodeURIComponent(missing.username)}@${missing.host}/no_such_database): database "no_such_database" does not exist`);
  });

  it('a deployment migrates with runMigrate before its processes start: Fanout\'s migrations and the app\'s, each once', async () => {
    await using db = await createTestDatabase({ name: 'migrate' });
    const before = await runEntry({ FANOUT_ROLE: 'worker', DATABASE_URL: db.url });
    expect(before.code).toBe(1);
    expect(before.stderr).toMatch(/lacks the Fanout migration 20261130000000_fanout_init/);
    const first = await runEntry({ FANOUT_ROLE: 'migrate', DATABASE_URL: db.url });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^MIGRATED \d+ \(20261130000000_fanout_init, .*20261201100000_echo_marks\)\n$/);
    expect((await runEntry({ FANOUT_ROLE: 'migrate', DATABASE_URL: db.url })).stdout).toBe('MIGRATED 0\n');
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      expect((await client.query("SELECT to_regclass('echo_mark') IS NOT NULL AS app, to_regclass('fanout_task') IS NOT NULL AS fanout")).rows[0]).toEqual({ app: true, fanout: true });
    } finally {
      await client.end();
    }
  });

  it('a local run serves each app on its port with its console and a local operator token, and stops cleanly', async () => {
    await using t = await appTest(echo);
    const lines: string[] = [];
    const dataDir = fileURLToPath(new URL(`../../../.test-artifacts/kit-local-${process.pid}`, import.meta.url));
    const local = await runLocal([echo], { dataDir, env: { ...TEST_ENV, DATABASE_URL: t.db.url, FANOUT_TOKENS: '', PORT: '0' } as Record<string, string>, signals: false, print: (l) => lines.push(l) });
    try {
      const [app] = local.apps;
      expect(lines).toContain('Echo');
      expect(lines.some((l) => l.includes(`console:  ${app!.consoleUrl}`))).toBe(true);
      const token = new URL(app!.consoleUrl).hash.replace('#token=', '');
      const me = await fetch(`${app!.apiUrl}/me`, { headers: { authorization: `Bearer ${token}` } });
      expect(await me.json()).toEqual({ tenant: 'local', role: 'operator' });
      const { id } = (await (await fetch(`${app!.apiUrl}/tasks`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ input: { count: 3 } }) })).json()) as { id: string };
      await waitFor(async () => (await t.rt.fanout.getTask(id))?.status === 'completed', { message: 'the local task' });
    } finally {
      await local.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

const localMain = fileURLToPath(new URL('./fixtures/local-main.ts', import.meta.url));

/** A local run of the echo app in a process of its own; `until` resolves once its output has `text`. */
function spawnLocal(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--conditions=dev-source', '--no-warnings', localMain], {
    env: { PATH: process.env.PATH, FANOUT_TOKENS: '', PORT: '0', FANOUT_LOG_LEVEL: 'error', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (out += c));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    exited,
    output: () => out,
    until: (text: string) => waitFor(() => out.includes(text) || child.exitCode !== null, { timeoutMs: 60_000, message: `"${text}" in: ${out}` }).then(() => out),
  };
}

describe('local runs', () => {
  it('one run per data folder: a second one fails at once naming the first, which goes on; a lock left by a killed run is taken over; FANOUT_DATA_DIR wins', async () => {
    await using db = await createTestDatabase({ name: 'local_lock' });
    const dataDir = fileURLToPath(new URL(`../../../.test-artifacts/kit-lock-${process.pid}`, import.meta.url));
    rmSync(dataDir, { recursive: true, force: true });
    const first = spawnLocal({ DATABASE_URL: db.url, LOCAL_DATA_DIR: dataDir });
    try {
      const shown = await first.until('Ctrl-C stops');
      const api = /API: {6}(\S+)/.exec(shown)![1]!;
      const token = /#token=(\S+)/.exec(shown)![1]!;
      const second = spawnLocal({ DATABASE_URL: db.url, LOCAL_DATA_DIR: dataDir });
      expect(await second.exited).toBe(1);
      expect(second.output().trim()).toBe(
        `fanout: another run is using ${dataDir} (PID ${first.child.pid}): stop it first (Ctrl-C in its terminal, or kill -INT ${first.child.pid}), or give this one another folder with FANOUT_DATA_DIR`,
      );
      // The first run still answers.
      expect((await fetch(`${api}/me`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
      first.child.kill('SIGINT');
      expect(await first.exited).toBe(0);
      expect(existsSync(join(dataDir, 'run.pid'))).toBe(false);

      // A run killed with SIGKILL leaves its lock; the next run takes it over.
      const killed = spawnLocal({ DATABASE_URL: db.url, LOCAL_DATA_DIR: dataDir });
      await killed.until('Ctrl-C stops');
      killed.child.kill('SIGKILL');
      await killed.exited;
      expect(readFileSync(join(dataDir, 'run.pid'), 'utf8')).toBe(String(killed.child.pid));
      const next = spawnLocal({ DATABASE_URL: db.url, LOCAL_DATA_DIR: dataDir });
      await next.until('Ctrl-C stops');
      next.child.kill('SIGTERM');
      expect(await next.exited, next.output()).toBe(0);

      // FANOUT_DATA_DIR, when set, is where the run keeps its files.
      const elsewhere = `${dataDir}-elsewhere`;
      const moved = spawnLocal({ DATABASE_URL: db.url, LOCAL_DATA_DIR: dataDir, FANOUT_DATA_DIR: elsewhere });
      expect(await moved.until('Ctrl-C stops')).toContain(`data stays in ${elsewhere}.`);
      expect(existsSync(join(elsewhere, 'local-token'))).toBe(true);
      moved.child.kill('SIGINT');
      expect(await moved.exited).toBe(0);
      rmSync(elsewhere, { recursive: true, force: true });
    } finally {
      first.child.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);

  it('Ctrl-C during start-up lets the sample load under way finish, then stops cleanly without serving', async () => {
    await using db = await createTestDatabase({ name: 'local_interrupt' });
    const dataDir = fileURLToPath(new URL(`../../../.test-artifacts/kit-interrupt-${process.pid}`, import.meta.url));
    const run = spawnLocal({ DATABASE_URL: db.url, LOCAL_DATA_DIR: dataDir, ECHO_SEED_WAITS_FOR_SIGINT: '1' });
    try {
      await run.until('SEEDING');
      run.child.kill('SIGINT');
      expect(await run.exited, run.output()).toBe(0);
      expect(run.output()).toContain('stopping:');
      expect(run.output()).toContain('stopped.');
      expect(run.output()).not.toContain('console:');
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      try {
        expect((await client.query("SELECT text FROM echo_mark WHERE tenant = '(seed)'")).rows).toEqual([{ text: 'loaded' }]);
      } finally {
        await client.end();
      }
    } finally {
      run.child.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('start-up mistakes are found before anything starts and name what to change: a port in use, PORT too high for the apps, a DATABASE_URL that does not parse or answer', async () => {
    await using db = await createTestDatabase({ name: 'local_mistakes' });
    const dataDir = fileURLToPath(new URL(`../../../.test-artifacts/kit-mistakes-${process.pid}`, import.meta.url));
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    const lines: string[] = [];
    const local = (env: Record<string, string>, apps = [echo]) => runLocal(apps, { dataDir, env: { ...TEST_ENV, FANOUT_TOKENS: '', ...env } as Record<string, string>, signals: false, print: (l) => lines.push(l) });
    try {
      await expect(local({ DATABASE_URL: db.url, PORT: String(port) })).rejects.toThrow(`port ${port} (Echo's console and API) is in use by another program: stop it, or set PORT to another port`);
      await expect(local({ DATABASE_URL: db.url, PORT: '65535' }, [echo, echo])).rejects.toThrow('invalid configuration: PORT: must leave room for 2 apps on the ports from it up: at most 65534 (got 65535)');
      await expect(local({ DATABASE_URL: db.url, PORT: '4100', FANOUT_METRICS_PORT: '4100' })).rejects.toThrow("invalid configuration: FANOUT_METRICS_PORT: must differ from the apps' ports (4100) (got 4100)");
      // Two apps given one local port: said as such, not as a port another program holds.
      const onPort = (name: string) => ({ ...echo, name, local: { ...echo.local, port: 4200 } });
      const { PORT: _, ...withoutPort } = TEST_ENV;
      const twoOnOnePort = runLocal([onPort('echo'), onPort('echo_two')], { dataDir, env: { ...withoutPort, FANOUT_TOKENS: '', DATABASE_URL: db.url } as Record<string, string>, signals: false, print: (l) => lines.push(l) });
      await expect(twoOnOnePort).rejects.toThrow("invalid configuration: local.port of echo_two: must differ from echo's (both 4200)");
      await expect(local({ DATABASE_URL: 'postgres://x:y@[::1:5432/db' })).rejects.toThrow('invalid configuration: DATABASE_URL: must be a postgres:// or postgresql:// connection URL');
      const refused = local({ DATABASE_URL: 'postgres://someone:hunter2@127.0.0.1:1/db' });
      await expect(refused).rejects.toThrow(/^DATABASE_URL \(someone@127\.0\.0\.1:1\/db\): .*ECONNREFUSED/);
      await expect(refused).rejects.not.toThrow(/hunter2/);
      // Nothing started, nothing printed, the folder left free.
      expect(lines).toEqual([]);
      expect(existsSync(join(dataDir, 'run.pid'))).toBe(false);
    } finally {
      taken.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
