import { readFileSync } from 'node:fs';
import type pg from 'pg';

/**
 * The database's clock now, in ms since the epoch. Fanout's 10,000-item run and the well-run
 * baseline are timed on it, from their start to the completion the database stored last.
 */
export async function databaseMs(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ t: string }>('SELECT extract(epoch FROM clock_timestamp()) * 1000 AS t');
  return Number(rows[0]!.t);
}

/**
 * CPU seconds the whole machine spent busy so far (Linux `/proc/stat`: every process, PostgreSQL
 * included), or null elsewhere. Fanout's runs and the baselines' are compared on it over the same
 * span as their clocks.
 */
export function machineCpuSeconds(): number | null {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const [user, nice, system, , , irq, softirq, steal] = fields as number[];
    return (user! + nice! + system! + irq! + softirq! + (steal ?? 0)) / 100; // USER_HZ is 100 on Linux
  } catch {
    return null;
  }
}

/** The machine's busy CPU seconds since `before` (two decimals), or null elsewhere. */
export function machineCpuSince(before: number | null): number | null {
  const after = machineCpuSeconds();
  return before === null || after === null ? null : Math.round((after - before) * 100) / 100;
}

/** CPU seconds a process spent so far (Linux `/proc/<pid>/stat`: user and system), or 0 elsewhere. */
export function processCpuSeconds(pid: number): number {
  try {
    // The fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // USER_HZ is 100 on Linux
  } catch {
    return 0;
  }
}
