import type { TaskView } from '../../api/types.ts';
import { DateTime } from '../../components/DateTime.tsx';
import { formatDuration, formatRate } from '../../state/format.ts';
import { elapsedMs, roundRate } from '../../state/rate.ts';

/** When the task was created, started, finished, its deadline, round, rate and elapsed time. */
export function TaskFacts({ task, now }: { task: TaskView; now: number }) {
  return (
    <dl class="facts">
      <div>
        <dt>Created</dt>
        <dd>
          <DateTime iso={task.createdAt} />
        </dd>
      </div>
      <div>
        <dt>Started</dt>
        <dd>
          <DateTime iso={task.startedAt} />
        </dd>
      </div>
      <div>
        <dt>Finished</dt>
        <dd>
          <DateTime iso={task.completedAt} />
        </dd>
      </div>
      {task.deadlineAt ? (
        <div>
          <dt>Deadline</dt>
          <dd>
            <DateTime iso={task.deadlineAt} />
          </dd>
        </div>
      ) : null}
      <div>
        <dt>Elapsed</dt>
        <dd>{formatDuration(elapsedMs(task, now))}</dd>
      </div>
      <div>
        <dt>{task.round > 1 ? `Rate (round ${task.round})` : 'Rate'}</dt>
        <dd>{formatRate(roundRate(task, now))}</dd>
      </div>
      <div>
        <dt>Kind</dt>
        <dd class="mono">{task.kind}</dd>
      </div>
      {task.archivedAt ? (
        <div>
          <dt>Archived</dt>
          <dd>
            <DateTime iso={task.archivedAt} />
          </dd>
        </div>
      ) : null}
    </dl>
  );
}
