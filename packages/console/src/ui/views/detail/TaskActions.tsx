import { useEffect, useRef, useState } from 'preact/hooks';
import type { TaskActionSpec } from '../../../config.ts';
import { isAbort } from '../../api/errors.ts';
import type { ItemCounts, TaskView } from '../../api/types.ts';
import { useApp } from '../../app-context.ts';
import { useFocusKeeper } from '../../hooks.ts';
import { valueAt } from '../../state/columns.ts';
import { formatCount, shortId } from '../../state/format.ts';
import { canArchive, canCancel, canDelete, canExport, canRetryFailed, retryCount } from '../../state/status.ts';
import { fillPath } from '../../state/template.ts';
import { useTaskActions, type Busy } from '../task-actions.ts';

/** Where a `whenApp` asks, for this task (its path holds `{id}` alone, checked with the configuration). */
const whenAppPath = (whenApp: NonNullable<TaskActionSpec['whenApp']>, taskId: string) => fillPath(whenApp.path, { id: taskId })!;

/**
 * The app's answers that the offered actions' `whenApp` read, by path: asked again when `version`
 * changes. A path not answered yet, or answered with an error, has no entry.
 */
function useAppAnswers(specs: TaskActionSpec[], taskId: string, version: string): Map<string, unknown> {
  const { api } = useApp();
  const [answers, setAnswers] = useState<Map<string, unknown>>(() => new Map());
  const paths = [...new Set(specs.flatMap((spec) => (spec.whenApp ? [whenAppPath(spec.whenApp, taskId)] : [])))].sort();
  const key = paths.join(' ');
  useEffect(() => {
    if (paths.length === 0) return;
    const controller = new AbortController();
    void Promise.all(
      paths.map(async (path) => {
        try {
          return [[path, await api.get<unknown>(path, controller.signal)] as const];
        } catch (e) {
          // Unknown (a 404, the network): the action waits for the next answer.
          if (!isAbort(e)) return [];
          throw e;
        }
      }),
    ).then(
      (entries) => setAnswers(new Map(entries.flat())),
      () => {},
    );
    return () => controller.abort();
  }, [api, key, version]);
  return answers;
}

/**
 * What can be done with the task now; an action that does not apply is not offered. `version`
 * changes with the task's status or round, or once the app's state of it may have (`appDone`: one
 * of the app's actions on the task ran): not with every item settled, so an answer is not asked
 * again (and the one on its way aborted) faster than it comes.
 */
export function TaskActions({ task, counts, version, done, appDone }: { task: TaskView; counts: ItemCounts | null; version: string; done(): void; appDone(): void }) {
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
  const byStatus = config.taskActions.filter((spec) => !spec.when || spec.when.includes(task.status));
  const answers = useAppAnswers(byStatus, task.id, version);
  const appActions = byStatus.filter((spec) => {
    if (!spec.whenApp) return true;
    const path = whenAppPath(spec.whenApp, task.id);
    if (!answers.has(path)) return false;
    return spec.whenApp.values.includes(String(valueAt(answers.get(path), spec.whenApp.field) ?? ''));
  });
  // A button disabled while its request runs has the focus back after it; one that went away (the
  // task was cancelled or archived) leaves it with the task's actions.
  const focusKeeper = useFocusKeeper(() => group.current);
  const retry = retryCount(task, counts);
  const retryLabel = [retry.failed > 0 ? `${formatCount(retry.failed)} failed` : '', retry.notRun > 0 ? `${formatCount(retry.notRun)} cancelled` : ''].filter(Boolean).join(' and ');
  const exportable = canExport(task);
  return (
    <div class="actions" role="group" aria-label={`Actions on task ${short}`} ref={group} tabIndex={-1} onFocusIn={focusKeeper.onFocusIn} onFocusOut={focusKeeper.onFocusOut}>
      {canCancel(task) ? (
        <button type="button" disabled={busy !== null} aria-label={`Cancel task ${short}`} onClick={() => void run('cancel', (b) => actions.cancel(task, b))}>
          {busy === 'cancel' ? 'Cancelling…' : 'Cancel task'}
        </button>
      ) : null}
      {canRetryFailed(task, counts) ? (
        <button
          type="button"
          class="primary"
          disabled={busy !== null}
          title={retry.notRun > 0 ? `Runs again the failures that may pass, and the items its ${task.stopReason === 'deadline' ? 'deadline' : 'failure tolerance'} cancelled before they ran` : 'Runs again the failures that may pass'}
          onClick={() => void run('retry', (b) => actions.retryFailed(task, retry.failed + retry.notRun, b))}
        >
          {busy === 'retry' ? 'Retrying…' : `Retry ${retryLabel}`}
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
      {appActions.map((spec) => (
        <button
          key={spec.path}
          type="button"
          disabled={busy !== null}
          aria-label={`${spec.label}: task ${short}`}
          onClick={() =>
            void run(`app ${spec.path}`, async (b) => {
              const ran = await actions.appAction(task, spec, b);
              // Done or refused (a 409: someone else was first), the app's state is asked again.
              appDone();
              return ran;
            })
          }
        >
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
