import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
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

/** Takes the lock of `dataDir`, or throws naming the run that holds it. */
export function lockRun(dataDir: string): RunLock {
  const file = join(dataDir, FILE);
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw error;
      let holder = NaN;
      try {
        holder = Number(readFileSync(file, 'utf8').trim());
      } catch {
        // Gone meanwhile: try again.
      }
      if (liveRun(holder)) {
        throw new Error(
          `another run is using ${dataDir} (PID ${holder}${holder === process.pid ? ', this process' : ''}): stop it first (Ctrl-C in its terminal, or kill -INT ${holder}), or give this one another folder with FANOUT_DATA_DIR`,
        );
      }
      rmSync(file, { force: true }); // left by a run that was killed
    }
  }
  let held = true;
  const release = () => {
    if (!held) return;
    held = false;
    process.off('exit', release);
    try {
      if (Number(readFileSync(file, 'utf8').trim()) === process.pid) rmSync(file, { force: true });
    } catch {
      // Already gone.
    }
  };
  process.on('exit', release);
  return { release };
}
