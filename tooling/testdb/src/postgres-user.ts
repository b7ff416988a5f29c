// As root, PostgreSQL runs as the `postgres` OS user. These helpers find (or create) that user and
// tell whether it can reach a path, judging by mode bits the way the kernel does for a process
// with that uid and primary gid only (libuv drops supplementary groups when it switches user).
import { execFile } from 'node:child_process';
import type { Stats } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { PostgresStartError } from './start-error.ts';

const execFileAsync = promisify(execFile);

export const POSTGRES_USER = 'postgres';

export interface OsUser {
  uid: number;
  gid: number;
}

export const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;

async function postgresIds(): Promise<OsUser | undefined> {
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

/** Makes sure the `postgres` OS user exists (creating it if needed) and returns its ids. */
export async function ensurePostgresUser(): Promise<OsUser> {
  const ids = await postgresIds();
  if (ids) return ids;
  try {
    await execFileAsync('groupadd', ['-f', POSTGRES_USER]);
    await execFileAsync('useradd', ['-g', POSTGRES_USER, POSTGRES_USER]);
  } catch (error) {
    const reason = (error as { stderr?: string }).stderr?.trim().split('\n').pop() || (error as Error).message;
    throw new PostgresStartError(`running as root, and could not create the "${POSTGRES_USER}" OS user the server must run as: ${reason}`, {
      cause: error,
    });
  }
  const created = await postgresIds();
  if (!created) throw new PostgresStartError(`running as root, and the "${POSTGRES_USER}" OS user is missing after creating it`);
  return created;
}

/** Whether `user` may search (`x`) a directory with these stats. */
export function canTraverse(stats: Stats, user: OsUser): boolean {
  if (stats.uid === user.uid) return (stats.mode & 0o100) !== 0;
  if (stats.gid === user.gid) return (stats.mode & 0o010) !== 0;
  return (stats.mode & 0o001) !== 0;
}

export interface Blocked {
  dir: string;
  stats: Stats;
}

/**
 * The first existing directory on the way from `/` to `target` (inclusive) that `user` cannot
 * enter, or undefined. Directories that don't exist yet are not checked: whoever creates them
 * decides their mode.
 */
export async function firstUntraversable(target: string, user: OsUser): Promise<Blocked | undefined> {
  const chain: string[] = [];
  for (let dir = path.resolve(target); ; dir = path.dirname(dir)) {
    chain.unshift(dir);
    if (dir === path.dirname(dir)) break;
  }
  for (const dir of chain) {
    let stats: Stats;
    try {
      stats = await fs.stat(dir);
    } catch {
      return undefined;
    }
    if (!canTraverse(stats, user)) return { dir, stats };
  }
  return undefined;
}

/** `mode 0700, owner root` for messages. */
export async function describeMode(stats: Stats): Promise<string> {
  return `mode ${(stats.mode & 0o7777).toString(8).padStart(4, '0')}, owner ${await userName(stats.uid)}`;
}

async function userName(uid: number): Promise<string> {
  try {
    const { stdout } = await execFileAsync('id', ['-nu', String(uid)]);
    return stdout.trim() || `uid ${uid}`;
  } catch {
    return `uid ${uid}`;
  }
}

/**
 * Creates (or checks) `dir`, a directory of ours under the shared location: owned by root and
 * writable by nobody else, because the server's binaries are run from there and clusters live
 * there. Its parent must be reachable by `user`.
 */
export async function ensureRootDir(dir: string, mode: number, user: OsUser): Promise<void> {
  const blocked = await firstUntraversable(path.dirname(dir), user);
  if (blocked) {
    throw new PostgresStartError(
      `the ${POSTGRES_USER} user cannot enter ${blocked.dir} (${await describeMode(blocked.stats)}), where the server's files would go; pass sharedDir to choose another place`,
    );
  }
  try {
    await fs.mkdir(dir, { mode });
    await fs.chmod(dir, mode); // mkdir's mode is masked by the umask
    return;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const stats = await fs.lstat(dir);
  if (!stats.isDirectory() || stats.uid !== 0 || (stats.mode & 0o022) !== 0) {
    throw new PostgresStartError(
      `${dir} is not a directory owned by root and writable only by root (${await describeMode(stats)}); remove it`,
    );
  }
  if (!canTraverse(stats, user)) await fs.chmod(dir, (stats.mode & 0o7777) | 0o011); // ours: set it right
}
