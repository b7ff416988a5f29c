import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { relocatedClusterDir } from './cluster-location.ts';
import { DEFAULT_SHARED_DIR, startPostgres } from './postgres.ts';
import type { PostgresServer } from './postgres.ts';
import { isRoot } from './postgres-user.ts';

/** Overrides the directory under which throwaway test clusters are created. */
export const TEMP_BASE_ENV = 'FANOUT_TEST_PG_DIR';

const PREFIX = 'fanout-testdb-';
const MIN_SHM_FREE_BYTES = 2 * 1024 ** 3;

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Where throwaway clusters go: `$FANOUT_TEST_PG_DIR`, else `/dev/shm` when it is a writable
 * tmpfs with at least 2 GiB free (creating files is far cheaper there, and CREATE DATABASE
 * creates hundreds: ~10 ms instead of ~250 ms per database on this repo's CI VM's ext4),
 * else the OS temp dir.
 */
async function baseDir(): Promise<string> {
  const configured = process.env[TEMP_BASE_ENV];
  if (configured) return path.resolve(configured);
  try {
    await fs.access('/dev/shm', fs.constants.W_OK);
    const stats = await fs.statfs('/dev/shm');
    if (stats.bavail * stats.bsize >= MIN_SHM_FREE_BYTES) return '/dev/shm';
  } catch {
    // no usable /dev/shm
  }
  return os.tmpdir();
}

function postmasterPid(dataDir: string): number {
  try {
    return Number.parseInt(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0] ?? '', 10) || 0;
  } catch {
    return 0; // no cluster, or not running
  }
}

/**
 * Removes clusters left behind by earlier runs that died without teardown: directories named
 * `fanout-testdb-<pid>-*` whose creating process is gone and whose server isn't running, and the
 * cluster a root run put under the shared directory for it (see cluster-location.ts).
 */
async function removeAbandoned(base: string): Promise<void> {
  let entries: string[];
  try {
    entries = await fs.readdir(base);
  } catch {
    return;
  }
  for (const entry of entries) {
    const match = /^fanout-testdb-(\d+)-/.exec(entry);
    if (!match || isAlive(Number(match[1]))) continue;
    const dir = path.join(base, entry);
    const relocated = relocatedClusterDir(path.join(dir, 'data'), DEFAULT_SHARED_DIR);
    try {
      if (isAlive(postmasterPid(path.join(dir, 'data'))) || isAlive(postmasterPid(relocated))) continue;
      await fs.rm(dir, { recursive: true, force: true });
      await fs.rm(relocated, { recursive: true, force: true });
    } catch {
      // best effort
    }
  }
}

/**
 * Starts a throwaway, non-durable cluster in a fresh temp directory; `stop()` also deletes the
 * directory, as does a process exit without `stop()`. If this process is killed outright, a later
 * call removes the directory (once the server is gone).
 */
/** A throwaway server that can also be restarted on the same port and data. */
export interface TempPostgresServer extends PostgresServer {
  /**
   * Stops the server and starts it again on the same data directory and port, once `whileDown`
   * (if given) has resolved: a test looks at its app during the outage there. `crash: true`
   * stops it the way a crash would for its clients: immediate shutdown (SIGQUIT: every session
   * cut, no checkpoint), so the next start runs crash recovery.
   */
  restart(options?: { crash?: boolean; whileDown?: () => Promise<unknown> }): Promise<void>;
}

export async function startTempPostgres(): Promise<TempPostgresServer> {
  const base = await baseDir();
  await removeAbandoned(base);
  const dir = await fs.mkdtemp(path.join(base, `${PREFIX}${process.pid}-`));
  // mkdtemp makes it 0700; as root the server's `postgres` user must pass through it.
  if (isRoot) await fs.chmod(dir, 0o711);
  const dataDir = path.join(dir, 'data');
  const remove = async (): Promise<void> => {
    await fs.rm(dir, { recursive: true, force: true });
    await fs.rm(relocatedClusterDir(dataDir, DEFAULT_SHARED_DIR), { recursive: true, force: true });
  };
  let server: PostgresServer;
  try {
    server = await startPostgres({ dataDir, durable: false });
  } catch (error) {
    await remove().catch(() => {});
    throw error;
  }
  // If this process exits without stop(), the server gets SIGINT (see server-process.ts); a
  // detached shell then waits for it to exit and deletes the directories.
  const onExit = (): void => {
    const script = 'i=0; while [ "$1" -gt 0 ] && kill -0 "$1" 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; rm -rf "$2" "$3"';
    spawn('sh', ['-c', script, 'sh', String(server.pid), dir, server.dataDir], { detached: true, stdio: 'ignore' }).unref();
  };
  process.on('exit', onExit);
  let stopping: Promise<void> | undefined;
  let restarting: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      process.removeListener('exit', onExit);
      await restarting?.catch(() => {});
      await server.stop();
      await fs.rm(dir, { recursive: true, force: true });
      await fs.rm(server.dataDir, { recursive: true, force: true });
    })());
  const restart = async ({ crash = false, whileDown }: { crash?: boolean; whileDown?: () => Promise<unknown> } = {}): Promise<void> => {
    if (stopping) throw new Error('the server was stopped');
    await restarting;
    restarting = (async () => {
      // SIGQUIT is PostgreSQL's immediate shutdown; stop() then only waits for the exit.
      if (crash) process.kill(server.pid, 'SIGQUIT');
      await server.stop();
      try {
        await whileDown?.();
      } finally {
        server = await startPostgres({ dataDir, port: server.port, durable: false });
      }
    })();
    await restarting;
  };
  return {
    url: server.url,
    port: server.port,
    get dataDir() {
      return server.dataDir;
    },
    get pid() {
      return server.pid;
    },
    stop,
    restart,
    [Symbol.asyncDispose]: stop,
  };
}
