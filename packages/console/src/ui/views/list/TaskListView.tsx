import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { describeError, isAbort } from '../../api/errors.ts';
import type { TaskPage, TaskSummary, TaskView } from '../../api/types.ts';
import { useApp } from '../../app-context.ts';
import { ErrorNote } from '../../components/ErrorNote.tsx';
import { useFocusKeeper, useNow, useStoreVersion, useThrottled } from '../../hooks.ts';
import { listQuery, matchesList, TABS, withNewTasks, type ListTab } from '../../state/tabs.ts';
import { isTerminal } from '../../state/task-merge.ts';
import { NewTaskPanel } from '../new-task/NewTaskPanel.tsx';
import { useTaskActions } from '../task-actions.ts';
import { SearchBox } from './SearchBox.tsx';
import { StatusTabs } from './StatusTabs.tsx';
import { TaskRow } from './TaskRow.tsx';

interface ListState {
  ids: string[];
  nextCursor: string | null;
  loading: boolean;
  loadingMore: boolean;
  error: string | null;
}

const EMPTY: ListState = { ids: [], nextCursor: null, loading: true, loadingMore: false, error: null };

/** The task list: status tabs with counts, id search, pages of tasks kept live, and the app's new-task panel. */
export function TaskListView({ tab, q }: { tab: ListTab; q: string }) {
  const { api, store, resync, navigate, config } = useApp();
  const actions = useTaskActions();
  useStoreVersion(store);
  const [list, setList] = useState<ListState>(EMPTY);
  const [summary, setSummary] = useState<TaskSummary['counts'] | null>(null);
  const [cancelling, setCancelling] = useState<ReadonlySet<string>>(new Set());
  const request = useRef<AbortController | null>(null);
  const filter = useRef({ tab, q });
  filter.current = { tab, q };

  const loadSummary = useCallback(() => {
    api.get<TaskSummary>('/tasks/summary').then(
      (answer) => setSummary(answer.counts),
      () => setSummary(null), // the tabs work without their counts
    );
  }, [api]);
  const summarySoon = useThrottled(loadSummary, 1000);

  const load = useCallback(
    async (cursor: string | null, keep = false) => {
      request.current?.abort();
      const controller = new AbortController();
      request.current = controller;
      setList((s) => (cursor ? { ...s, loadingMore: true, error: null } : { ...EMPTY, ids: keep ? s.ids : [] }));
      try {
        const page = await api.get<TaskPage>(`/tasks${listQuery(tab, q, cursor)}`, controller.signal);
        const ids = page.tasks.map((t) => store.upsert(t).id);
        setList((s) => ({ ids: cursor ? [...s.ids, ...ids.filter((id) => !s.ids.includes(id))] : ids, nextCursor: page.nextCursor, loading: false, loadingMore: false, error: null }));
      } catch (error) {
        if (isAbort(error)) return;
        setList((s) => ({ ...s, loading: false, loadingMore: false, error: describeError(error) }));
      }
    },
    [api, store, tab, q],
  );

  useEffect(() => {
    void load(null);
    return () => request.current?.abort();
  }, [load]);
  useEffect(loadSummary, [loadSummary]);
  useEffect(
    () =>
      resync.on(() => {
        void load(null, true);
        loadSummary();
      }),
    [resync, load, loadSummary],
  );

  // Tasks submitted elsewhere join the list when they belong to it, and so do known tasks a change
  // of status brought into it (a task retried elsewhere, on the Active tab); any change of status
  // moves the tab counts.
  useEffect(
    () =>
      store.subscribe(({ submitted, moved }) => {
        const fresh = [...submitted, ...moved].filter((t) => matchesList(t, filter.current.tab, filter.current.q));
        if (fresh.length > 0) setList((s) => withNewTasks(s, fresh, (id) => store.get(id)));
        if (moved.length > 0 || submitted.length > 0) summarySoon();
      }),
    [store, summarySoon],
  );

  // A task that no longer belongs to the tab (it ended, was archived) leaves it at once.
  const tasks = list.ids.map((id) => store.get(id)).filter((t): t is TaskView => t !== undefined && matchesList(t, tab, q));
  const now = useNow(tasks.some((t) => !isTerminal(t.status)));
  const tabLabel = TABS.find((t) => t.tab === tab)!.label;

  // Busy from the request on: the confirmation comes first, so focus returns to the button when it
  // is dismissed.
  const cancel = async (task: TaskView) => {
    const busy = (on: boolean) =>
      setCancelling((s) => {
        const next = new Set(s);
        if (on) next.add(task.id);
        else next.delete(task.id);
        return next;
      });
    if (await actions.cancel(task, busy)) summarySoon();
  };

  // A cancelled task's button goes away, a row leaves the tab: focus goes to the task's link when
  // its row is still there, else to the list's heading, instead of falling to the page. "Load more
  // tasks" goes away with the last page: focus goes to the first task it brought.
  const moreFrom = useRef(0);
  const focusKeeper = useFocusKeeper(
    (place) =>
      (place.taskId ? document.querySelector<HTMLElement>(`li.task-row[data-task-id="${CSS.escape(place.taskId)}"] .task-link`) : null) ??
      (place.element.classList.contains('load-more') ? document.querySelectorAll<HTMLElement>('li.task-row .task-link')[moreFrom.current] : null) ??
      document.getElementById('tasks-heading'),
  );

  const created = (task: TaskView) => {
    if (matchesList(task, tab, q)) setList((s) => (s.ids.includes(task.id) ? s : { ...s, ids: [task.id, ...s.ids] }));
    summarySoon();
  };

  return (
    <div class="list-layout">
      <section class="panel tasks-panel" aria-labelledby="tasks-heading" onFocusIn={focusKeeper.onFocusIn} onFocusOut={focusKeeper.onFocusOut}>
        <div class="section-head">
          <h1 id="tasks-heading" tabIndex={-1}>
            Tasks
          </h1>
          {/* One column puts the panel below the list: a way to it without scrolling past every task. */}
          <button
            type="button"
            class="jump-new"
            onClick={() => {
              const first = document.querySelector<HTMLElement>('.new-task input, .new-task select, .new-task button');
              first?.focus();
              first?.scrollIntoView({ block: 'center' });
            }}
          >
            {config.newTask.title}
          </button>
          <SearchBox q={q} onSearch={(next) => navigate({ view: 'tasks', tab, q: next }, { replace: true })} />
        </div>
        <StatusTabs tab={tab} q={q} summary={summary} />
        {list.error && !list.loadingMore ? <ErrorNote message={`The tasks could not be loaded: ${list.error}`} retry={() => void load(null)} /> : null}
        {list.loading && tasks.length === 0 ? (
          <p class="muted" role="status">
            Loading tasks…
          </p>
        ) : null}
        {!list.loading && !list.error && tasks.length === 0 ? (
          <p class="empty">{q ? `No task id starts with “${q}” under ${tabLabel}.` : tab === 'all' ? 'No tasks yet. Start one with the panel.' : `No ${tabLabel.toLowerCase()} tasks.`}</p>
        ) : null}
        {tasks.length > 0 ? (
          <ul class="task-list" aria-label={`${tabLabel} tasks`} aria-busy={list.loading ? 'true' : undefined}>
            {tasks.map((task) => (
              <TaskRow key={task.id} task={task} now={now} cancelling={cancelling.has(task.id)} cancel={cancel} />
            ))}
          </ul>
        ) : null}
        {list.nextCursor ? (
          <div class="more">
            <button
              type="button"
              class="load-more"
              disabled={list.loadingMore}
              onClick={() => {
                moreFrom.current = tasks.length;
                void load(list.nextCursor);
              }}
            >
              {list.loadingMore ? 'Loading…' : 'Load more tasks'}
            </button>
          </div>
        ) : null}
      </section>
      <NewTaskPanel onCreated={created} />
    </div>
  );
}
