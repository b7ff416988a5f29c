import type { TaskView } from '../api/types.ts';
import { settledOf } from './task-merge.ts';

const time = (iso: string | null): number | null => {
  if (!iso) return null;
  const t = Date.parse(iso);
  return Number.isNaN(t) ? null : t;
};

/**
 * Items settled per second in the current round:
 * `(settled - roundSettledAtStart) / ((completedAt or now) - roundStartedAt)`. A retry's round
 * is measured on its own, not diluted by the first round. A task that was stopped (cancelled,
 * its deadline, its failure tolerance) cancelled its pending items at once, in no time: its rate
 * counts the items that ran (`succeeded + failed`), in its first round; in a later one what was
 * cancelled before it began is not known, so it has no rate. Null before the round started, or
 * while too little time has passed to say.
 */
export function roundRate(task: TaskView, now: number): number | null {
  const start = time(task.roundStartedAt);
  if (start === null) return null;
  const completed = time(task.completedAt);
  // A completedAt older than the round's start belongs to an earlier round.
  const end = completed !== null && completed >= start ? completed : now;
  const seconds = (end - start) / 1000;
  if (seconds < 1) return null;
  if (task.stopReason !== null || task.cancelled > 0) {
    if (task.round > 1) return null;
    return (task.succeeded + task.failed) / seconds;
  }
  return Math.max(0, settledOf(task) - task.roundSettledAtStart) / seconds;
}

/** How long the task has run: from its start (or creation) to its end, or to now. */
export function elapsedMs(task: TaskView, now: number): number | null {
  const start = time(task.startedAt);
  if (start === null) return null;
  const end = time(task.completedAt) ?? now;
  return Math.max(0, end - start);
}
