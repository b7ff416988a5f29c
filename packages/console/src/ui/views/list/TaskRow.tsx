import type { TaskView } from '../../api/types.ts';
import { DateTime } from '../../components/DateTime.tsx';
import { ProgressBar } from '../../components/ProgressBar.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { formatCount, formatDuration, formatRate, shortId } from '../../state/format.ts';
import { elapsedMs, roundRate } from '../../state/rate.ts';
import { routeHash } from '../../state/route.ts';
import { canCancel } from '../../state/status.ts';
import { settledOf } from '../../state/task-merge.ts';

export interface TaskRowProps {
  task: TaskView;
  now: number;
  cancelling: boolean;
  cancel(task: TaskView): void;
}

/** One task of the list: its link, input summary, status, progress, counts, rate and elapsed time. */
export function TaskRow({ task, now, cancelling, cancel }: TaskRowProps) {
  const short = shortId(task.id);
  return (
    <li class="task-row" data-task-id={task.id}>
      <div class="row-top">
        <a class="task-link" href={routeHash({ view: 'task', id: task.id, items: 'all' })}>
          <span class="sr-only">Task </span>
          <span class="mono">{short}</span>
          <span class="sr-only">, </span>
          <span class="summary">{task.summary ?? task.kind}</span>
        </a>
        <StatusBadge task={task} />
        <DateTime iso={task.createdAt} />
      </div>
      <ProgressBar task={task} />
      <div class="row-meta">
        <span>
          {formatCount(settledOf(task))} / {formatCount(task.total)} settled
        </span>
        <span class="c-ok">
          <span class="swatch swatch-ok" aria-hidden="true" /> {formatCount(task.succeeded)} succeeded
        </span>
        <span class={task.failed > 0 ? 'c-bad' : 'muted'}>
          <span class="swatch swatch-bad" aria-hidden="true" /> {formatCount(task.failed)} failed
        </span>
        {task.cancelled > 0 ? (
          <span class="c-cx">
            <span class="swatch swatch-cx" aria-hidden="true" /> {formatCount(task.cancelled)} cancelled
          </span>
        ) : null}
        {task.round > 1 ? <span>round {task.round}</span> : null}
        <span title="Items settled per unit of time in the current round">{formatRate(roundRate(task, now))}</span>
        <span title="Elapsed">{formatDuration(elapsedMs(task, now))}</span>
        {canCancel(task) ? (
          <button type="button" class="small" disabled={cancelling} aria-label={`Cancel task ${short}`} onClick={() => cancel(task)}>
            {cancelling ? 'Cancelling…' : 'Cancel'}
          </button>
        ) : null}
      </div>
    </li>
  );
}
