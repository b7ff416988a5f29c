import type { PageSpec } from '../../config.ts';
import { useEffect, useState } from 'preact/hooks';
import type { Me } from '../api/types.ts';
import type { Route } from '../state/route.ts';
import type { StreamStatus } from '../stream/event-stream.ts';

export interface HeaderProps {
  title: string;
  /** The app's own pages, linked in the navigation. */
  pages: readonly PageSpec[];
  me: Me;
  route: Route;
  status: StreamStatus;
  reconnect(): void;
  signOut(): void;
  skip(): void;
}

function LiveStatus({ status, reconnect }: { status: StreamStatus; reconnect(): void }) {
  const [now, setNow] = useState(Date.now());
  const waiting = status.state === 'waiting';
  useEffect(() => {
    if (!waiting) return;
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [waiting]);
  if (status.state === 'live') return <span class="live live-on">Live</span>;
  if (status.state === 'waiting') {
    const seconds = Math.max(0, Math.ceil((status.retryAt - now) / 1000));
    return (
      <span class="live live-off" title={status.reason}>
        Offline, reconnecting{seconds > 0 ? ` in ${seconds} s` : '…'}
        <span class="sr-only">. {status.reason}</span>{' '}
        <button type="button" class="link-button" onClick={reconnect}>
          Reconnect now
        </button>
      </span>
    );
  }
  return <span class="live live-wait">Connecting…</span>;
}

/** The banner: the app's name, the views, the live connection's state, who is signed in. */
export function Header({ title, pages, me, route, status, reconnect, signOut, skip }: HeaderProps) {
  const onTasks = route.view === 'tasks' || route.view === 'task';
  return (
    <header class="topbar">
      <a
        class="skip-link"
        href="#main"
        onClick={(e) => {
          // The hash is the route: focus the content instead of navigating.
          e.preventDefault();
          skip();
        }}
      >
        Skip to main content
      </a>
      <span class="brand">{title}</span>
      <nav aria-label="Console" class="topnav">
        <a href="#/tasks" aria-current={onTasks ? 'page' : undefined}>
          Tasks
        </a>
        {pages.map((p) => (
          <a key={p.slug} href={`#/pages/${p.slug}`} aria-current={route.view === 'page' && route.slug === p.slug ? 'page' : undefined}>
            {p.title}
          </a>
        ))}
        {me.role === 'operator' ? (
          <a href="#/ops" aria-current={route.view === 'ops' ? 'page' : undefined}>
            Operations
          </a>
        ) : null}
      </nav>
      <div class="session">
        <LiveStatus status={status} reconnect={reconnect} />
        <span class="who">
          {me.tenant} <span class="muted">({me.role})</span>
        </span>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </div>
    </header>
  );
}
