import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { ResolvedConsoleConfig } from '../../config.ts';
import { ApiClient } from '../api/client.ts';
import type { ItemFailedEvent, ItemLogEvent, Me, TaskView } from '../api/types.ts';
import { AppContext, type AppServices } from '../app-context.ts';
import { ConfirmDialog, type ConfirmRequest } from '../components/ConfirmDialog.tsx';
import { Toasts, type Toast, type ToastInput } from '../components/Toasts.tsx';
import { Emitter } from '../state/emitter.ts';
import { shortId } from '../state/format.ts';
import { isTaskId, parseRoute, routeHash, tokenFromFragment, type Route } from '../state/route.ts';
import { endingText } from '../state/status.ts';
import { TaskStore } from '../state/task-store.ts';
import { EventStream, type StreamStatus } from '../stream/event-stream.ts';
import { Header } from './Header.tsx';
import { AppPageView } from './app/AppPageView.tsx';
import { OpsView } from './ops/OpsView.tsx';
import { TaskDetailView } from './detail/TaskDetailView.tsx';
import { TaskListView } from './list/TaskListView.tsx';

export interface ConsoleProps {
  config: ResolvedConsoleConfig;
  token: string;
  me: Me;
  signOut(message?: string | null): void;
  /** The server refused the token mid-session. */
  expired(): void;
}

const scopeOf = (route: Route): string | null => (route.view === 'task' && isTaskId(route.id) ? route.id : null);

function announceEndings(ended: TaskView[]): string {
  if (ended.length === 1) return endingText(ended[0]!);
  const listed = ended.slice(0, 5).map((t) => `${shortId(t.id)} ${t.status}`);
  return `${ended.length} tasks ended: ${listed.join(', ')}${ended.length > 5 ? ', …' : ''}.`;
}

/** The signed-in console: routing, the one live connection, toasts, confirmations, announcements. */
export function Console({ config, token, me, signOut, expired }: ConsoleProps) {
  const tokenRef = useRef(token);
  tokenRef.current = token;
  const expiredRef = useRef(expired);
  expiredRef.current = expired;

  const [route, setRoute] = useState<Route>(() => parseRoute(location.hash));
  const [toasts, setToasts] = useState<Toast[]>([]);
  const [confirmation, setConfirmation] = useState<{ request: ConfirmRequest; resolve(ok: boolean, text?: string): void } | null>(null);
  const [announcement, setAnnouncement] = useState('');
  const [streamStatus, setStreamStatus] = useState<StreamStatus>({ state: 'idle' });
  const main = useRef<HTMLElement>(null);

  const core = useMemo(() => {
    const api = new ApiClient({ apiBase: config.apiBase, token: () => tokenRef.current, onUnauthorized: () => expiredRef.current() });
    const store = new TaskStore({ fetchTask: (id) => api.get<TaskView>(`/tasks/${encodeURIComponent(id)}`) });
    return { api, store, itemEvents: new Emitter<ItemFailedEvent | ItemLogEvent>(), resync: new Emitter<void>() };
  }, [config.apiBase]);

  const stream = useMemo(
    () =>
      new EventStream({
        url: (scope) => core.api.url(scope ? `/events?task=${encodeURIComponent(scope)}` : '/events'),
        headers: () => core.api.headers(),
        onStatus: setStreamStatus,
        onUnauthorized: () => expiredRef.current(),
        onEvent: (event) => {
          if (event.type === 'resync') core.resync.emit();
          else if (event.type === 'item.failed' || event.type === 'item.log') core.itemEvents.emit(event);
          else if ('counts' in event) core.store.applyEvent(event);
        },
      }),
    [core],
  );

  const nextToast = useRef(1);
  const toast = useCallback((input: ToastInput) => {
    const t: Toast = { id: nextToast.current++, kind: input.kind ?? 'ok', text: input.text };
    setToasts((list) => [...list.slice(-4), t]);
    setTimeout(() => setToasts((list) => list.filter((x) => x.id !== t.id)), t.kind === 'error' ? 12_000 : 6_000);
  }, []);

  const announce = useCallback((text: string) => {
    // Clearing first makes a repeated sentence heard again.
    setAnnouncement('');
    setTimeout(() => setAnnouncement(text), 50);
  }, []);

  const navigate = useCallback((to: Route, options: { replace?: boolean } = {}) => {
    const hash = routeHash(to);
    if (options.replace) {
      history.replaceState(history.state, '', hash);
      setRoute(parseRoute(hash));
    } else if (location.hash !== hash) location.hash = hash;
  }, []);

  const services = useMemo<AppServices>(
    () => ({
      ...core,
      config,
      me,
      toast,
      announce,
      navigate,
      confirm: (request) => new Promise<boolean>((resolve) => setConfirmation({ request, resolve })),
      ask: (request) => new Promise<string | null>((resolve) => setConfirmation({ request, resolve: (ok, text) => resolve(ok ? (text ?? '') : null) })),
    }),
    [core, config, me, toast, announce, navigate],
  );

  // Back, forward, links and deep links: the hash is the route. Focus moves to the new view.
  useEffect(() => {
    const onHash = () => {
      if (tokenFromFragment(location.hash)) return; // a sign-in link: the root takes it
      setRoute(parseRoute(location.hash));
      main.current?.focus({ preventScroll: true });
      window.scrollTo(0, 0);
    };
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);

  // One live connection per page: following one task while its detail is open, every task otherwise.
  const scope = scopeOf(route);
  useEffect(() => {
    stream.open(scope);
  }, [stream, scope]);
  useEffect(() => () => stream.close(), [stream]);
  useEffect(() => () => core.store.dispose(), [core]);

  useEffect(() => {
    const online = () => stream.reconnectNow();
    window.addEventListener('online', online);
    return () => window.removeEventListener('online', online);
  }, [stream]);

  useEffect(
    () =>
      core.store.subscribe(({ ended }) => {
        if (ended.length > 0) announce(announceEndings(ended));
      }),
    [core, announce],
  );

  useEffect(() => {
    const view =
      route.view === 'task' ? `Task ${shortId(route.id)}` : route.view === 'ops' ? 'Operations' : route.view === 'page' ? (config.pages.find((p) => p.slug === route.slug)?.title ?? 'Page') : 'Tasks';
    document.title = `${view} · ${config.title}`;
  }, [route, config.title, config.pages]);

  let view;
  const appPage = route.view === 'page' ? config.pages.find((p) => p.slug === route.slug) : undefined;
  if (route.view === 'task') view = <TaskDetailView key={route.id} id={route.id} items={route.items} />;
  else if (route.view === 'page') view = appPage ? <AppPageView key={appPage.slug} page={appPage} /> : <NotFound />;
  else if (route.view === 'ops') view = me.role === 'operator' ? <OpsView /> : <NotAllowed />;
  else if (route.view === 'tasks') view = <TaskListView tab={route.tab} q={route.q} />;
  else view = <NotFound />;

  return (
    <AppContext.Provider value={services}>
      <Header
        title={config.title}
        pages={config.pages}
        me={me}
        route={route}
        status={streamStatus}
        reconnect={() => stream.reconnectNow()}
        signOut={() => signOut(null)}
        skip={() => main.current?.focus()}
      />
      <main id="main" ref={main} tabIndex={-1}>
        {view}
      </main>
      <Toasts toasts={toasts} dismiss={(id) => setToasts((list) => list.filter((t) => t.id !== id))} />
      <div class="sr-only" role="status" aria-live="polite">
        {announcement}
      </div>
      <ConfirmDialog
        request={confirmation?.request ?? null}
        answer={(ok, text) => {
          confirmation?.resolve(ok, text);
          setConfirmation(null);
        }}
      />
    </AppContext.Provider>
  );
}

function NotFound() {
  return (
    <section class="panel narrow">
      <h1>Page not found</h1>
      <p>
        This address shows nothing in the console. <a href="#/tasks">Go to the task list</a>.
      </p>
    </section>
  );
}

function NotAllowed() {
  return (
    <section class="panel narrow">
      <h1>Operations</h1>
      <p>The operations view is for operators; this token signs in as a user.</p>
    </section>
  );
}
