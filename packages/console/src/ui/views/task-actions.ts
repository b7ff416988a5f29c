import { useMemo } from 'preact/hooks';
import type { ExportSpec, TaskActionSpec } from '../../config.ts';
import { ApiError, describeError } from '../api/errors.ts';
import type { ItemView, TaskView } from '../api/types.ts';
import { useApp } from '../app-context.ts';
import { formatCount, shortId } from '../state/format.ts';

const taskPath = (task: TaskView) => `/tasks/${encodeURIComponent(task.id)}`;

/**
 * Told when an action's request starts (true) and ends (false): its confirmation, if any, comes
 * first, so the button that asked stays enabled while the dialog is open, and focus returns to it
 * when the dialog is dismissed.
 */
export type Busy = (on: boolean) => void;

/**
 * The task actions, each with its confirmation where it destroys something, its outcome as a
 * toast, and its error shown rather than thrown. Each resolves true when it succeeded.
 */
export function useTaskActions() {
  const { api, store, toast, confirm, navigate } = useApp();
  return useMemo(() => {
    /** Whether the task is no longer there for this token (a 404 of an action may be the app's own resource's). */
    async function gone(task: TaskView): Promise<boolean> {
      try {
        await api.get<TaskView>(taskPath(task));
        return false;
      } catch (error) {
        return error instanceof ApiError && error.status === 404;
      }
    }
    async function run(what: string, action: () => Promise<string>, busy?: Busy, task?: TaskView): Promise<boolean> {
      busy?.(true);
      try {
        toast({ text: await action() });
        return true;
      } catch (error) {
        if (task && error instanceof ApiError && error.status === 404 && (await gone(task))) {
          // Deleted meanwhile (on another page, by someone else): it leaves the page, not an error
          // on a task that is no longer there.
          store.remove(task.id);
          navigate({ view: 'tasks', tab: 'all', q: '' });
          toast({ kind: 'error', text: `Task ${shortId(task.id)} is no longer there: it was deleted.` });
          return false;
        }
        toast({ kind: 'error', text: `${what} failed: ${describeError(error)}` });
        return false;
      } finally {
        busy?.(false);
      }
    }
    return {
      /** A button of the app's own: its confirmation when it has one, the request, the outcome. */
      async appAction(task: TaskView, spec: TaskActionSpec, busy?: Busy): Promise<boolean> {
        const short = shortId(task.id);
        if (spec.confirm && !(await confirm({ title: `${spec.label}: task ${short}?`, body: spec.confirm, confirmLabel: spec.label, tone: 'primary' }))) return false;
        return run(`${spec.label} (task ${short})`, async () => {
          await api.send(spec.method, spec.path.replace('{id}', encodeURIComponent(task.id)));
          return `${spec.label}: task ${short} done.`;
        }, busy, task);
      },
      async cancel(task: TaskView, busy?: Busy): Promise<boolean> {
        const short = shortId(task.id);
        const ok = await confirm({
          title: `Cancel task ${short}?`,
          body: 'Items not started yet will be skipped and counted as cancelled; items running now finish. This cannot be undone.',
          confirmLabel: 'Cancel task',
          dismissLabel: 'Keep running',
        });
        if (!ok) return false;
        return run(`Cancelling task ${short}`, async () => {
          store.upsert(await api.send<TaskView>('POST', `${taskPath(task)}/cancel`));
          return `Task ${short} is being cancelled.`;
        }, busy, task);
      },
      retryFailed(task: TaskView, count: number, busy?: Busy): Promise<boolean> {
        const short = shortId(task.id);
        return run(`Retrying task ${short}`, async () => {
          const answer = await api.send<{ retried: number; task: TaskView }>('POST', `${taskPath(task)}/retry-failed`, { retryableOnly: true });
          store.upsert(answer.task);
          const retried = answer.retried ?? count;
          return `Retrying ${formatCount(retried)} item${retried === 1 ? '' : 's'} of task ${short}.`;
        }, busy, task);
      },
      retryItem(task: TaskView, item: ItemView): Promise<boolean> {
        return run(`Retrying item ${item.key}`, async () => {
          const answer = await api.send<{ retried: number; task: TaskView }>('POST', `${taskPath(task)}/items/${encodeURIComponent(item.id)}/retry`);
          store.upsert(answer.task);
          return `Retrying item ${item.key} of task ${shortId(task.id)}.`;
        }, undefined, task);
      },
      archive(task: TaskView, busy?: Busy): Promise<boolean> {
        const short = shortId(task.id);
        return run(`Archiving task ${short}`, async () => {
          store.upsert(await api.send<TaskView>('POST', `${taskPath(task)}/archive`));
          return `Task ${short} archived; it is listed under Archived.`;
        }, busy, task);
      },
      async remove(task: TaskView, busy?: Busy): Promise<boolean> {
        const short = shortId(task.id);
        const ok = await confirm({
          title: `Delete task ${short}?`,
          body: 'The task, its items, results and logs are deleted for good. Exports will no longer be possible.',
          confirmLabel: 'Delete task',
        });
        if (!ok) return false;
        return run(`Deleting task ${short}`, async () => {
          await api.send<void>('DELETE', taskPath(task));
          store.remove(task.id);
          navigate({ view: 'tasks', tab: 'all', q: '' });
          return `Task ${short} deleted.`;
        }, busy, task);
      },
      download(task: TaskView, spec: ExportSpec, busy?: Busy): Promise<boolean> {
        const short = shortId(task.id);
        const ext = /\.([a-z0-9]+)(?:\?|$)/i.exec(spec.path)?.[1] ?? 'txt';
        return run(`Downloading ${spec.label} of task ${short}`, async () => {
          const name = await api.download(spec.path.replaceAll('{id}', encodeURIComponent(task.id)), `${task.kind}-${task.id}.${ext}`);
          return `Downloaded ${name}.`;
        }, busy, task);
      },
    };
  }, [api, store, toast, confirm, navigate]);
}
