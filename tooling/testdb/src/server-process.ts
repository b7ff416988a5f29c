// The OS processes behind a server: initdb, run to its end, and the postgres server itself.
//
// The server runs in its own session and process group (`detached`), so a terminal's Ctrl-C
// (SIGINT to the whole foreground group) reaches only our Node process, which can then close
// its pools and runtime before it stops the server. In exchange, nothing stops the server when
// this process goes away, so two things do:
// - an `exit` listener sends SIGINT (fast shutdown) to the servers still running;
// - for exits that run no listener (a fatal signal, SIGKILL), a watcher: a small `sh` in its own
//   group that blocks reading a pipe only this process writes to. When this process dies the
//   kernel closes the pipe, `read` returns, and the watcher sends the server SIGINT.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import type { OsUser } from './postgres-user.ts';

export interface ProcessOptions {
  /** Run as this user (root only). */
  user?: OsUser | undefined;
  env: NodeJS.ProcessEnv;
  /** Receives stdout and stderr text as it arrives. */
  onOutput(text: string): void;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

function spawnWith(file: string, args: string[], options: ProcessOptions, detached: boolean): ChildProcess {
  const child = spawn(file, args, {
    // Our working directory may be one the `postgres` user cannot enter.
    cwd: '/',
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached,
    ...(options.user ? { uid: options.user.uid, gid: options.user.gid } : {}),
  });
  child.stdout?.setEncoding('utf8').on('data', options.onOutput);
  child.stderr?.setEncoding('utf8').on('data', options.onOutput);
  return child;
}

/**
 * Resolves once the process has started; rejects with the spawn error (ENOENT, EACCES). Later
 * 'error' events (a signal that could not be sent) go to the output instead of ending the process.
 */
function started(child: ChildProcess, onOutput: (text: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    child.once('spawn', () => {
      child.removeListener('error', reject);
      child.on('error', (error) => onOutput(`${error.message}\n`));
      resolve();
    });
    child.once('error', reject);
  });
}

function exitOf(child: ChildProcess): Promise<Exit> {
  return new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
}

/** Runs a program to its end (initdb), in our process group: Ctrl-C while it runs aborts it. */
export async function runToEnd(file: string, args: string[], options: ProcessOptions): Promise<Exit> {
  const child = spawnWith(file, args, options, false);
  const exit = exitOf(child);
  await started(child, options.onOutput);
  return exit;
}

export interface ServerProcess {
  readonly pid: number;
  /** Resolves when the process has exited (also when it died on its own). */
  readonly exited: Promise<Exit>;
  /** The exit, once it has happened. */
  exit(): Exit | undefined;
  /** See {@link stopServer}. */
  stop(timeoutMs?: number): Promise<void>;
}

/**
 * How long `stop()` lets sessions end on their own before it cuts them off. A pool's `end()`
 * resolves once it has asked its connections to close, not once they have: a server stopped
 * right after it would terminate them mid-goodbye, and each would report a lost connection.
 */
export const SMART_SHUTDOWN_MS = 1000;

/**
 * Stops a server: smart shutdown (SIGTERM: no new connections, sessions end on their own) for
 * {@link SMART_SHUTDOWN_MS}, then fast shutdown (SIGINT: sessions are terminated) for
 * `timeoutMs`, then immediate shutdown (SIGQUIT).
 */
export async function stopServer(signal: (signal: NodeJS.Signals) => void, exited: () => Promise<unknown>, pid: number, timeoutMs = 60_000): Promise<void> {
  signal('SIGTERM');
  if (await exitsWithin(exited(), SMART_SHUTDOWN_MS)) return;
  signal('SIGINT');
  if (await exitsWithin(exited(), timeoutMs)) return;
  signal('SIGQUIT');
  if (await exitsWithin(exited(), 10_000)) return;
  throw new Error(`PostgreSQL (PID ${pid}) did not exit within ${SMART_SHUTDOWN_MS + timeoutMs + 10_000} ms of SIGTERM, SIGINT and SIGQUIT`);
}

/** Servers started here and still running. */
const running = new Set<ChildProcess>();
let exitListener = false;

function onExit(): void {
  for (const child of running) child.kill('SIGINT');
}

function startWatcher(pid: number): ChildProcess | undefined {
  if (process.platform === 'win32') return undefined;
  const watcher = spawn('/bin/sh', ['-c', 'read _; kill -INT "$1" 2>/dev/null', 'sh', String(pid)], {
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  watcher.on('error', () => {}); // no sh: the exit listener still covers ordinary exits
  watcher.stdin?.on('error', () => {});
  (watcher.stdin as Socket | null)?.unref();
  watcher.unref();
  return watcher;
}

/** Starts the server process in its own process group; resolves once it is running. */
export async function spawnServer(file: string, args: string[], options: ProcessOptions): Promise<ServerProcess> {
  const child = spawnWith(file, args, options, true);
  let exit: Exit | undefined;
  let watcher: ChildProcess | undefined;
  const exited = exitOf(child).then((result) => {
    exit = result;
    running.delete(child);
    // Before its PID can be reused by another process.
    watcher?.kill('SIGKILL');
    return result;
  });
  await started(child, options.onOutput);
  running.add(child);
  if (!exitListener) {
    exitListener = true;
    process.on('exit', onExit);
  }
  watcher = startWatcher(child.pid!);

  let stopping: Promise<void> | undefined;
  const stop = (timeoutMs?: number): Promise<void> =>
    (stopping ??= exit ? Promise.resolve() : stopServer((signal) => child.kill(signal), () => exited, child.pid!, timeoutMs));
  return { pid: child.pid!, exited, exit: () => exit, stop };
}

async function exitsWithin(exited: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([exited.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
