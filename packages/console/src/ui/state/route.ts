import type { ItemFilter } from '../api/types.ts';
import { isListTab, type ListTab } from './tabs.ts';

export type ItemTab = ItemFilter | 'all';

export type Route =
  | { view: 'tasks'; tab: ListTab; q: string }
  | { view: 'task'; id: string; items: ItemTab }
  | { view: 'ops' }
  | { view: 'page'; slug: string }
  | { view: 'unknown'; hash: string };

const ITEM_TABS: readonly ItemTab[] = ['all', 'pending', 'waiting', 'running', 'succeeded', 'failed', 'cancelled'];
const isItemTab = (value: string | null): value is ItemTab => ITEM_TABS.includes(value as ItemTab);

/** Reads the hash route: `#/tasks?tab=failed&q=0193`, `#/tasks/<id>?items=failed`, `#/ops`, `#/pages/<slug>`. */
export function parseRoute(hash: string): Route {
  const raw = hash.replace(/^#/, '');
  const [path = '', query = ''] = raw.split('?', 2);
  const params = new URLSearchParams(query);
  const segments = path.split('/').filter(Boolean).map((s) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  });
  if (segments.length === 0 || (segments.length === 1 && segments[0] === 'tasks')) {
    const tab = params.get('tab');
    return { view: 'tasks', tab: isListTab(tab) ? tab : 'all', q: params.get('q') ?? '' };
  }
  if (segments.length === 2 && segments[0] === 'tasks') {
    const items = params.get('items');
    return { view: 'task', id: segments[1]!, items: isItemTab(items) ? items : 'all' };
  }
  if (segments.length === 1 && segments[0] === 'ops') return { view: 'ops' };
  if (segments.length === 2 && segments[0] === 'pages' && /^[a-z0-9-]+$/.test(segments[1]!)) return { view: 'page', slug: segments[1]! };
  return { view: 'unknown', hash: raw };
}

/** The hash of a route, the inverse of parseRoute. */
export function routeHash(route: Route): string {
  switch (route.view) {
    case 'tasks': {
      const params = new URLSearchParams();
      if (route.tab !== 'all') params.set('tab', route.tab);
      if (route.q) params.set('q', route.q);
      const query = params.toString();
      return `#/tasks${query ? `?${query}` : ''}`;
    }
    case 'task':
      return `#/tasks/${encodeURIComponent(route.id)}${route.items !== 'all' ? `?items=${route.items}` : ''}`;
    case 'ops':
      return '#/ops';
    case 'page':
      return `#/pages/${route.slug}`;
    case 'unknown':
      return `#${route.hash}`;
  }
}

/** The token of a `#token=…` sign-in link, if the fragment is one. */
export function tokenFromFragment(hash: string): string | null {
  const raw = hash.replace(/^#/, '');
  if (raw.startsWith('/')) return null;
  const token = new URLSearchParams(raw).get('token');
  return token && token.trim() ? token.trim() : null;
}

/**
 * Whether a route's id can be a task's: a UUID as the server checks one (RFC 9562: its version and
 * variant digits, or the nil and max UUIDs). Another is no task, and asks nothing.
 */
export const isTaskId = (id: string): boolean =>
  /^([0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}|00000000-0000-0000-0000-000000000000|ffffffff-ffff-ffff-ffff-ffffffffffff)$/i.test(id);
