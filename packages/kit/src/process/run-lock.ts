import { linkSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * One local run per data folder: a second `pnpm start` in the same clone would share the first
 * one's embedded database, and stop it on its way out. The lock is a file holding the PID of the
 * run that holds it; one whose process is gone (a run killed with SIGKILL) is taken over.
 */
export interface RunLock {
  release(): void;
}

const FILE = 'run.pid';

/** Whether `pid` is a live process that may be a run (on Linux, a Node.js process). */
function liveRun(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false; // EPERM: it lives, under another user
  }
  try {
    // A PID reused by another program since a run was killed does not hold the folder.
    return /node/i.test(readFileSync(`/proc/${pid}/cmdline`, 'latin1'));
  } catch {
    return true; // no /proc: a live process is taken for a run
  }
}

const readPid = (file: string): number | null => {
  try {
    return Number(readFileSync(file, 'utf8').trim());
  } catch {
    return null; // gone
  }
};

const held = (dataDir: string, pid: number) =>
  new Error(
    `another run is using ${dataDir} (PID ${pid}${pid === process.pid ? ', this process' : ''}): stop it first (Ctrl-C in its terminal, or kill -INT ${pid}), or give this one another folder with FANOUT_DATA_DIR`,
  );

/** Takes the lock of `dataDir`, or throws naming the run that holds it. */
export function lockRun(dataDir: string): RunLock {
  const file = join(dataDir, FILE);
  // Written whole beside the lock, then linked to its name: the lock never exists half written,
  // and the link fails when another run holds it.
  const mine = join(dataDir, `${FILE}.${process.pid}`);
  writeFileSync(mine, String(process.pid), { mode: 0o600 });
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        linkSync(mine, file);
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const holder = readPid(file);
      if (holder === null) continue; // released meanwhile
      if (liveRun(holder) || attempt >= 3) throw held(dataDir, holder);
      // Left by a run that was killed: moved aside, unless another run took it over meanwhile (then
      // what was moved is that run's lock, and it is put back).
      const aside = join(dataDir, `${FILE}.stale.${process.pid}`);
      try {
        renameSync(file, aside);
      } catch {
        continue; // moved by another run meanwhile
      }
      const moved = readPid(aside);
      if (moved !== holder && moved !== null && liveRun(moved)) {
        try {
          linkSync(aside, file);
        } finally {
          rmSync(aside, { force: true });
        }
        throw held(dataDir, moved);
      }
      rmSync(aside, { force: true });
    }
  } finally {
    rmSync(mine, { force: true });
  }
  let holding = true;
  const release = () => {
    if (!holding) return;
    holding = false;
    process.off('exit', release);
    if (readPid(file) === process.pid) rmSync(file, { force: true });
  };
  process.on('exit', release);
  return { release };
}
