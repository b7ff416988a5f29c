import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startPostgres } from './postgres.ts';
import type { PostgresServer } from './postgres.ts';

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

/**
 * Removes clusters left behind by earlier runs that died without teardown: directories named
 * `fanout-testdb-<pid>-*` whose creating process is gone and whose server isn't running.
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
    try {
      const pidFile = await fs.readFile(path.join(dir, 'data', 'postmaster.pid'), 'utf8').catch(() => '');
      if (isAlive(Number.parseInt(pidFile.split('\n')[0] ?? '', 10))) continue;
      await fs.rm(dir, { recursive: true, force: true });
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
export async function startTempPostgres(): Promise<PostgresServer> {
  const base = await baseDir();
  await removeAbandoned(base);
  const dir = await fs.mkdtemp(path.join(base, `${PREFIX}${process.pid}-`));
  let server: PostgresServer;
  try {
    server = await startPostgres({ dataDir: path.join(dir, 'data'), durable: false });
  } catch (error) {
    await fs.rm(dir, { recursive: true, force: true }).catch(() => {});
    throw error;
  }
  // If this process exits without stop(), the server gets SIGINT (see postgres.ts); a detached
  // shell then waits for it to exit and deletes the directory.
  const onExit = (): void => {
    let pid = 0;
    try {
      pid = Number.parseInt(readFileSync(path.join(dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0] ?? '', 10) || 0;
    } catch {
      // not running
    }
    const script = 'i=0; while [ "$1" -gt 0 ] && kill -0 "$1" 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; rm -rf "$2"';
    spawn('sh', ['-c', script, 'sh', String(pid), dir], { detached: true, stdio: 'ignore' }).unref();
  };
  process.on('exit', onExit);
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      process.removeListener('exit', onExit);
      await server.stop();
      await fs.rm(dir, { recursive: true, force: true });
    })());
  return { url: server.url, port: server.port, dataDir: server.dataDir, stop, [Symbol.asyncDispose]: stop };
}
