import type { TaskView } from '../api/types.ts';
import { shortId } from '../state/format.ts';
import { progressLabel, progressText } from '../state/status.ts';
import { settledOf } from '../state/task-merge.ts';

const pct = (n: number, total: number) => `${total > 0 ? (n / total) * 100 : 0}%`;

/**
 * The task's progress: succeeded, failed and cancelled segments, told apart by colour and by
 * pattern (failed striped, cancelled dotted), with the figure beside it and the counts in words
 * for assistive technology.
 */
export function ProgressBar({ task, large = false }: { task: TaskView; large?: boolean }) {
  const total = task.total;
  return (
    <div class={`progress${large ? ' progress-large' : ''}`}>
      <div
        class="bar"
        role="progressbar"
        aria-label={`Progress of task ${shortId(task.id)}`}
        aria-valuemin={0}
        aria-valuemax={total}
        aria-valuenow={settledOf(task)}
        aria-valuetext={progressText(task)}
      >
        <span class="seg seg-ok" style={{ width: pct(task.succeeded, total) }} />
        <span class="seg seg-bad" style={{ width: pct(task.failed, total) }} />
        <span class="seg seg-cx" style={{ width: pct(task.cancelled, total) }} />
      </div>
      <span class="pct" aria-hidden="true">
        {progressLabel(task)}
      </span>
    </div>
  );
}
