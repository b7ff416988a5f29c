// Where a cluster lives. Not root: where it was asked for. As root, the server runs as the
// `postgres` OS user, who must be able to enter every directory above the cluster; when it can't
// (a clone in a 0700 `mktemp -d` or under /root), the cluster goes to a place it can reach,
// `<sharedDir>/fanout-data/<sha256 of the requested path, 16 hex>/`, and the requested path
// becomes a symlink to it. Permissions of directories the caller owns are never changed.
import { createHash } from 'node:crypto';
import type { Stats } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { describeMode, ensureRootDir, firstUntraversable, POSTGRES_USER } from './postgres-user.ts';
import type { OsUser } from './postgres-user.ts';
import { isLivePostmaster, readPostmasterPid } from './postmaster-pid.ts';
import { PostgresStartError } from './start-error.ts';

/** As root: where the cluster asked for at `dataDir` lives when `postgres` can't reach `dataDir`. */
export function relocatedClusterDir(dataDir: string, sharedDir: string): string {
  const key = createHash('sha256').update(path.resolve(dataDir)).digest('hex').slice(0, 16);
  return path.join(sharedDir, 'fanout-data', key);
}

async function lstatOrUndefined(file: string): Promise<Stats | undefined> {
  try {
    return await fs.lstat(file);
  } catch {
    return undefined;
  }
}

/** Creates the missing ancestors of `dir` with mode 0755 (set explicitly: the umask may be 077). */
async function createParents(dir: string): Promise<void> {
  const missing: string[] = [];
  for (let parent = path.dirname(dir); !(await lstatOrUndefined(parent)); parent = path.dirname(parent)) {
    missing.unshift(parent);
  }
  await fs.mkdir(path.dirname(dir), { recursive: true, mode: 0o755 });
  for (const created of missing) await fs.chmod(created, 0o755);
}

/**
 * Decides where the cluster for `dataDir` lives and creates the directories above it. Returns the
 * directory to run initdb/postgres on. `user` is the `postgres` OS user when running as root.
 */
export async function placeCluster(dataDir: string, user: OsUser | undefined, sharedDir: string): Promise<string> {
  if (!user) {
    await createParents(dataDir);
    return dataDir;
  }
  const relocated = relocatedClusterDir(dataDir, sharedDir);
  const own = await lstatOrUndefined(dataDir);
  if (own?.isSymbolicLink() && (await fs.readlink(dataDir)) === relocated) {
    await ensureRootDir(path.dirname(relocated), 0o711, user);
    return relocated;
  }

  const blocked = await firstUntraversable(path.dirname(dataDir), user);
  if (!blocked) {
    await createParents(dataDir);
    return dataDir;
  }
  const where = `${blocked.dir} (${await describeMode(blocked.stats)})`;
  if (own) {
    if (!own.isDirectory()) {
      throw new PostgresStartError(`${dataDir} is not a directory`);
    }
    const entries = await fs.readdir(dataDir);
    if (entries.includes('PG_VERSION')) {
      throw new PostgresStartError(
        `the ${POSTGRES_USER} user cannot enter ${where}, which holds the cluster in ${dataDir}; make it traversable (chmod o+x ${blocked.dir}) or move the cluster`,
      );
    }
    if (entries.length > 0) {
      throw new PostgresStartError(`${dataDir} is not empty but holds no PostgreSQL cluster (no PG_VERSION); refusing to initdb there`);
    }
    // An empty directory, about to become the link to the cluster.
    await fs.rmdir(dataDir);
  }

  await ensureRootDir(path.dirname(relocated), 0o711, user);
  // A cluster there without the link is one whose data directory was deleted (e.g. `rm -rf .data`):
  // it goes too, as it would have had it lived at dataDir. Unless a server still runs on it.
  if (await lstatOrUndefined(relocated)) {
    const lock = await readPostmasterPid(relocated);
    if (!lock || !(await isLivePostmaster(lock.pid, relocated))) await fs.rm(relocated, { recursive: true, force: true });
  }
  await fs.mkdir(path.dirname(dataDir), { recursive: true });
  try {
    await fs.symlink(relocated, dataDir);
  } catch (error) {
    // Another process got there first: fine when it made the same link.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || (await fs.readlink(dataDir).catch(() => '')) !== relocated) throw error;
  }
  return relocated;
}
