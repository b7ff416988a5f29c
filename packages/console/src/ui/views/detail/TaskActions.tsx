import { useRef, useState } from 'preact/hooks';
import type { ItemCounts, TaskView } from '../../api/types.ts';
import { useApp } from '../../app-context.ts';
import { useFocusKeeper } from '../../hooks.ts';
import { formatCount, shortId } from '../../state/format.ts';
import { canArchive, canCancel, canDelete, canExport, canRetryFailed } from '../../state/status.ts';
import { useTaskActions, type Busy } from '../task-actions.ts';

/** What can be done with the task now; an action that does not apply is not offered. */
export function TaskActions({ task, counts, done }: { task: TaskView; counts: ItemCounts | null; done(): void }) {
  const { config } = useApp();
  const actions = useTaskActions();
  const [busy, setBusy] = useState<string | null>(null);
  const group = useRef<HTMLDivElement>(null);
  const short = shortId(task.id);
  // Busy from the request on: a confirmation comes first, and focus returns to its button when it
  // is dismissed.
  const run = async (name: string, action: (busy: Busy) => Promise<boolean>, refresh = true) => {
    if ((await action((on) => setBusy(on ? name : null))) && refresh) done();
  };
  // A button disabled while its request runs has the focus back after it; one that went away (the
  // task was cancelled or archived) leaves it with the task's actions.
  const focusKeeper = useFocusKeeper(() => group.current);
  const retryable = counts?.retryableFailed ?? 0;
  const exportable = canExport(task);
  return (
    <div class="actions" role="group" aria-label={`Actions on task ${short}`} ref={group} tabIndex={-1} onFocusIn={focusKeeper.onFocusIn} onFocusOut={focusKeeper.onFocusOut}>
      {canCancel(task) ? (
        <button type="button" disabled={busy !== null} aria-label={`Cancel task ${short}`} onClick={() => void run('cancel', (b) => actions.cancel(task, b))}>
          {busy === 'cancel' ? 'Cancelling…' : 'Cancel task'}
        </button>
      ) : null}
      {canRetryFailed(task, counts) ? (
        <button type="button" class="primary" disabled={busy !== null} onClick={() => void run('retry', (b) => actions.retryFailed(task, retryable, b))}>
          {busy === 'retry' ? 'Retrying…' : `Retry ${formatCount(retryable)} failed`}
        </button>
      ) : null}
      {config.exports.map((spec) => (
        <button
          type="button"
          key={spec.path}
          disabled={!exportable || busy !== null}
          aria-describedby={exportable ? undefined : 'export-hint'}
          onClick={() => void run(`export ${spec.path}`, (b) => actions.download(task, spec, b), false)}
        >
          {busy === `export ${spec.path}` ? 'Downloading…' : `Export ${spec.label}`}
        </button>
      ))}
      {config.taskActions
        .filter((spec) => !spec.when || spec.when.includes(task.status))
        .map((spec) => (
          <button key={spec.path} type="button" disabled={busy !== null} aria-label={`${spec.label}: task ${short}`} onClick={() => void run(`app ${spec.path}`, (b) => actions.appAction(task, spec, b))}>
            {busy === `app ${spec.path}` ? `${spec.label}…` : spec.label}
          </button>
        ))}
      {canArchive(task) ? (
        <button type="button" disabled={busy !== null} aria-label={`Archive task ${short}`} onClick={() => void run('archive', (b) => actions.archive(task, b))}>
          {busy === 'archive' ? 'Archiving…' : 'Archive'}
        </button>
      ) : null}
      {canDelete(task) ? (
        <button type="button" class="danger" disabled={busy !== null} aria-label={`Delete task ${short}`} onClick={() => void run('delete', (b) => actions.remove(task, b), false)}>
          {busy === 'delete' ? 'Deleting…' : 'Delete'}
        </button>
      ) : null}
      {!exportable && config.exports.length > 0 ? (
        <span id="export-hint" class="hint">
          Exports are ready once the task has finished.
        </span>
      ) : null}
    </div>
  );
}
