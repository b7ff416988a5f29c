import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, describeError, isAbort } from '../../api/errors.ts';
import type { FailureGroup, ItemCounts, ItemPage, ItemView, TaskView } from '../../api/types.ts';
import { useApp } from '../../app-context.ts';
import { ErrorNote } from '../../components/ErrorNote.tsx';
import { ProgressBar } from '../../components/ProgressBar.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { useNow, useStoreVersion, useThrottled } from '../../hooks.ts';
import { formatCount, formatDateTime, shortId } from '../../state/format.ts';
import { isTaskId, type ItemTab } from '../../state/route.ts';
import { progressText, purgedCounts } from '../../state/status.ts';
import { isTerminal, settledOf } from '../../state/task-merge.ts';
import { useTaskActions } from '../task-actions.ts';
import { CountsGrid } from './CountsGrid.tsx';
import { FailureGroups } from './FailureGroups.tsx';
import { ItemFilters, itemFilterLabel } from './ItemFilters.tsx';
import { ItemTable } from './ItemTable.tsx';
import { TaskActions } from './TaskActions.tsx';
import { TaskFacts } from './TaskFacts.tsx';
import { TablePanelView } from '../app/TablePanelView.tsx';

const PAGE = 50;
const signature = (t: TaskView | undefined) => (t ? `${t.round}:${settledOf(t)}:${t.total}:${t.status}` : '');

/** How long after a task's end its app's state of it may still change (its fan-in). */
const APP_SETTLE_MS = 15_000;

/**
 * One task: its state and facts, counts by item state, failures by error code, the items page by
 * page with their logs, and the actions. While it is open the live stream follows this task; its
 * counts and items are asked again (at most once a second) whenever its counters move.
 */
export function TaskDetailView({ id, items: filter }: { id: string; items: ItemTab }) {
  const { api, store, config, resync, itemEvents } = useApp();
  const actions = useTaskActions();
  useStoreVersion(store);
  const task = store.get(id);
  const path = `/tasks/${encodeURIComponent(id)}`;
  // A route whose id is no task's id (a link cut short) asks the server nothing.
  const isId = isTaskId(id);

  const [missing, setMissing] = useState<string | null>(null);
  const [taskError, setTaskError] = useState<string | null>(null);
  const [counts, setCounts] = useState<ItemCounts | null>(null);
  const [groups, setGroups] = useState<FailureGroup[] | null>(null);
  const [page, setPage] = useState<ItemPage | null>(null);
  const [itemsError, setItemsError] = useState<string | null>(null);
  // The page cursors belong to one filter: another filter starts again at page 1.
  const [pager, setPager] = useState<{ filter: ItemTab; cursors: (string | null)[] }>({ filter, cursors: [null] });
  const cursors = pager.filter === filter ? pager.cursors : [null];
  const setCursors = (f: (c: (string | null)[]) => (string | null)[]) => setPager({ filter, cursors: f(cursors) });
  const [expanded, setExpanded] = useState<ReadonlySet<string>>(new Set());
  const [retrying, setRetrying] = useState<ReadonlySet<string>>(new Set());
  const [downloading, setDownloading] = useState(false);
  // Turns once one of the app's actions on this task (a button of the task, a row's) ran: the
  // app's panels and the actions that read its state ask again.
  const [appTurn, setAppTurn] = useState(0);
  const appDone = useCallback(() => setAppTurn((n) => n + 1), []);
  // What an app keeps of a task is finished by its fan-in, which runs as the task ends (a load
  // leaves "loading" there): a task that ended a moment ago has its app's panels and actions asked
  // again, a little later and once more after that.
  const ended = task !== undefined && isTerminal(task.status);
  const completedAt = task?.completedAt ?? null;
  useEffect(() => {
    // (A task that ended long before the page opened has nothing more coming.)
    if (!ended || (completedAt !== null && Date.now() - Date.parse(completedAt) > APP_SETTLE_MS)) return;
    const timers = [1_500, 5_000, APP_SETTLE_MS].map((ms) => setTimeout(appDone, ms));
    return () => timers.forEach(clearTimeout);
  }, [ended, completedAt, appDone]);
  const cursor = cursors[cursors.length - 1] ?? null;
  const itemsRequest = useRef<AbortController | null>(null);

  const seen = useRef('');
  const loadTask = useCallback(async () => {
    if (!isId) return;
    try {
      // What the server just said needs no second look.
      seen.current = signature(store.upsert(await api.get<TaskView>(path)));
      setTaskError(null);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) setMissing(error.message);
      else setTaskError(describeError(error));
    }
  }, [api, store, path, isId]);

  // A task whose items retention deleted has only its own counters: nothing more to ask.
  const purged = useCallback(() => !isId || Boolean(store.get(id)?.purgedAt), [store, id, isId]);

  const loadCounts = useCallback(async () => {
    if (purged()) return;
    try {
      setCounts(await api.get<ItemCounts>(`${path}/counts`));
    } catch {
      // The tiles keep their last figures; the task's own state says the rest.
    }
  }, [api, path, purged]);

  const loadGroups = useCallback(async () => {
    if (purged()) return;
    try {
      setGroups((await api.get<{ groups: FailureGroup[] }>(`${path}/failures`)).groups);
    } catch {
      // The groups shown stay; the items table still lists every failure.
    }
  }, [api, path, purged]);

  const loadItems = useCallback(async () => {
    itemsRequest.current?.abort();
    if (purged()) return;
    const controller = new AbortController();
    itemsRequest.current = controller;
    const params = new URLSearchParams({ limit: String(PAGE) });
    if (filter !== 'all') params.set('status', filter);
    if (cursor) params.set('cursor', cursor);
    try {
      setPage(await api.get<ItemPage>(`${path}/items?${params.toString()}`, controller.signal));
      setItemsError(null);
    } catch (error) {
      if (!isAbort(error)) setItemsError(describeError(error));
    }
  }, [api, path, filter, cursor, purged]);

  const refresh = useCallback(() => {
    void loadTask();
    void loadCounts();
    void loadGroups();
    void loadItems();
  }, [loadTask, loadCounts, loadGroups, loadItems]);
  const refreshSoon = useThrottled(refresh, 1000);

  useEffect(() => {
    void loadTask();
    void loadCounts();
    void loadGroups();
  }, [loadTask, loadCounts, loadGroups]);
  useEffect(() => {
    void loadItems();
    return () => itemsRequest.current?.abort();
  }, [loadItems]);

  // The task's counters moved (a live event) or an item failed: ask again, once a second at most.
  useEffect(
    () =>
      store.subscribe(() => {
        const now = signature(store.get(id));
        if (now !== seen.current) {
          seen.current = now;
          refreshSoon();
        }
      }),
    [store, id, refreshSoon],
  );
  useEffect(() => itemEvents.on((e) => e.taskId === id && e.type === 'item.failed' && refreshSoon()), [itemEvents, id, refreshSoon]);
  useEffect(() => resync.on(refresh), [resync, refresh]);

  const now = useNow(task !== undefined && !isTerminal(task.status));

  if (missing || !isId) {
    return (
      <section class="panel narrow" aria-labelledby="missing-heading">
        <h1 id="missing-heading">Task not found</h1>
        {isId ? (
          <p>
            There is no task <span class="mono">{id}</span> for this token: it may have been deleted, or belong to another tenant.
          </p>
        ) : (
          <p>
            <span class="mono">{id}</span> is not a task id (a task's id is a UUID, such as <span class="mono">0193abcd-0000-7000-8000-000000000001</span>): the link may have been cut short.
          </p>
        )}
        <p>
          <a href="#/tasks">Back to the task list</a>
        </p>
      </section>
    );
  }
  if (!task) {
    return (
      <section class="panel narrow">
        <h1>Task {shortId(id)}</h1>
        {taskError ? <ErrorNote message={`The task could not be loaded: ${taskError}`} retry={() => void loadTask()} /> : <p role="status">Loading…</p>}
      </section>
    );
  }

  const short = shortId(task.id);
  const toggle = (itemId: string) =>
    setExpanded((s) => {
      const next = new Set(s);
      if (!next.delete(itemId)) next.add(itemId);
      return next;
    });
  const retryItem = async (item: ItemView) => {
    setRetrying((s) => new Set(s).add(item.id));
    if (await actions.retryItem(task, item)) refresh();
    setRetrying((s) => {
      const next = new Set(s);
      next.delete(item.id);
      return next;
    });
  };
  const downloadFailures = async () => {
    setDownloading(true);
    await actions.download(task, { label: 'failures CSV', path: '/tasks/{id}/failures.csv' });
    setDownloading(false);
  };
  const pageNumber = cursors.length;

  return (
    <div class="detail">
      <nav aria-label="Breadcrumb" class="breadcrumb">
        <ol>
          <li>
            <a href="#/tasks">Tasks</a>
          </li>
          <li aria-current="page">Task {short}</li>
        </ol>
      </nav>
      <section class="panel" aria-labelledby="task-heading">
        <div class="detail-head">
          <h1 id="task-heading">
            Task <span class="mono">{task.id}</span>
          </h1>
          <StatusBadge task={task} />
        </div>
        {task.summary ? <p class="summary-line">{task.summary}</p> : null}
        {task.error ? (
          <p class="stop-error">
            <strong>Stopped: </strong>
            {task.error}
          </p>
        ) : null}
        {taskError ? <ErrorNote message={`The task could not be refreshed: ${taskError}`} retry={() => void loadTask()} /> : null}
        <ProgressBar task={task} large />
        <p class="muted progress-words">{progressText(task)}</p>
        <TaskFacts task={task} now={now} />
        <TaskActions task={task} counts={counts} version={`${task.status}:${task.round}/${appTurn}`} done={refresh} appDone={appDone} />
      </section>

      <section class="panel" aria-labelledby="counts-heading">
        <h2 id="counts-heading">Items by state</h2>
        <CountsGrid counts={task.purgedAt ? purgedCounts(task) : counts} />
      </section>

      {config.detailPanels.map((panel) => (
        <TablePanelView key={panel.title} panel={panel} taskId={task.id} version={signature(task)} appTurn={appTurn} appDone={appDone} />
      ))}

      {!task.purgedAt && groups && groups.length > 0 ? <FailureGroups task={task} groups={groups} downloading={downloading} download={() => void downloadFailures()} /> : null}

      <section class="panel" aria-labelledby="items-heading">
        <div class="section-head">
          <h2 id="items-heading">Items</h2>
        </div>
        {task.purgedAt ? (
          <p class="empty" role="note">
            Its items and their logs were deleted by retention on {formatDateTime(task.purgedAt)}; the task's counts above stay.
          </p>
        ) : null}
        {task.purgedAt ? null : <ItemFilters taskId={task.id} current={filter} counts={counts} />}
        {task.purgedAt ? null : itemsError ? <ErrorNote message={`The items could not be loaded: ${itemsError}`} retry={() => void loadItems()} /> : null}
        {task.purgedAt ? null : page === null && !itemsError ? <p class="muted">Loading items…</p> : null}
        {!task.purgedAt && page && page.items.length === 0 ? <p class="empty">{filter === 'all' ? 'No items dispatched yet.' : `No ${itemFilterLabel(filter).toLowerCase()} items.`}</p> : null}
        {!task.purgedAt && page && page.items.length > 0 ? (
          <ItemTable
            task={task}
            items={page.items}
            columns={config.columns}
            expanded={expanded}
            toggle={toggle}
            retrying={retrying}
            retry={(item) => void retryItem(item)}
            label={`Items of task ${short}, ${itemFilterLabel(filter).toLowerCase()}, page ${pageNumber}`}
          />
        ) : null}
        {!task.purgedAt && page && (pageNumber > 1 || page.nextCursor) ? (
          <div class="pager">
            <button type="button" disabled={pageNumber <= 1} onClick={() => setCursors((c) => c.slice(0, -1))}>
              Previous page
            </button>
            <span>
              Page {pageNumber}
              {counts ? <span class="muted"> · {formatCount(PAGE)} per page</span> : null}
            </span>
            <button type="button" disabled={!page.nextCursor} onClick={() => page.nextCursor && setCursors((c) => [...c, page.nextCursor])}>
              Next page
            </button>
          </div>
        ) : null}
      </section>
    </div>
  );
}
