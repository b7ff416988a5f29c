// `postmaster.pid`, the lock file a running server keeps in its data directory: line 1 its PID,
// line 4 its port, line 8 its status (`starting`, `ready`, `stopping`), which is what pg_ctl
// waits on.
import fs from 'node:fs/promises';
import path from 'node:path';

export interface PostmasterPid {
  pid: number;
  port: number | undefined;
  status: string;
}

export async function readPostmasterPid(dataDir: string): Promise<PostmasterPid | undefined> {
  let text: string;
  try {
    text = await fs.readFile(path.join(dataDir, 'postmaster.pid'), 'utf8');
  } catch {
    return undefined;
  }
  const lines = text.split('\n');
  const pid = Number.parseInt(lines[0] ?? '', 10);
  const port = Number.parseInt(lines[3] ?? '', 10);
  return { pid: Number.isFinite(pid) ? pid : 0, port: Number.isFinite(port) ? port : undefined, status: (lines[7] ?? '').trim() };
}

export function processExists(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
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
export async function isLivePostmaster(pid: number, dataDir: string): Promise<boolean> {
  if (pid <= 0 || pid === process.pid || !processExists(pid)) return false;
  try {
    const [cwd, realDataDir] = await Promise.all([fs.readlink(`/proc/${pid}/cwd`), fs.realpath(dataDir)]);
    return cwd === realDataDir;
  } catch {
    return true;
  }
}
