import type { TaskStatus, TaskSummary, TaskView } from '../api/types.ts';

export type ListTab = 'all' | 'active' | 'completed' | 'failed' | 'cancelled' | 'archived';

export const TABS: readonly { tab: ListTab; label: string }[] = [
  { tab: 'all', label: 'All' },
  { tab: 'active', label: 'Active' },
  { tab: 'completed', label: 'Completed' },
  { tab: 'failed', label: 'Failed' },
  { tab: 'cancelled', label: 'Cancelled' },
  { tab: 'archived', label: 'Archived' },
];

export const isListTab = (value: string | null): value is ListTab => TABS.some((t) => t.tab === value);

const ACTIVE: readonly TaskStatus[] = ['queued', 'running', 'stopping'];

/** The task count a tab shows, from `/tasks/summary`. */
export function tabCount(tab: ListTab, summary: TaskSummary['counts']): number {
  switch (tab) {
    case 'all':
      return summary.queued + summary.running + summary.stopping + summary.completed + summary.failed + summary.cancelled;
    case 'active':
      return summary.queued + summary.running + summary.stopping;
    case 'archived':
      return summary.archived;
    default:
      return summary[tab];
  }
}

/** A task id search the API accepts: at least 4 hex characters (dashes allowed) of the start of an id. */
export function searchQuery(q: string): string | null {
  const s = q.trim().toLowerCase();
  if (!/^[0-9a-f-]+$/.test(s)) return null;
  return s.replace(/-/g, '').length >= 4 ? s : null;
}

/** The query string of `GET /tasks` for a tab, a search and a page. */
export function listQuery(tab: ListTab, q: string, cursor: string | null, limit = 50): string {
  const params = new URLSearchParams();
  if (tab === 'archived') params.set('archived', 'true');
  else if (tab !== 'all') params.set('status', tab);
  const search = searchQuery(q);
  if (search) params.set('q', search);
  params.set('limit', String(limit));
  if (cursor) params.set('cursor', cursor);
  return `?${params.toString()}`;
}

/** Whether a task newly seen (submitted elsewhere) belongs in the list a tab and a search show. */
export function matchesList(task: TaskView, tab: ListTab, q: string): boolean {
  const search = searchQuery(q);
  if (search && !task.id.toLowerCase().startsWith(search)) return false;
  if (tab === 'archived') return task.archivedAt !== null;
  if (task.archivedAt !== null) return false;
  if (tab === 'all') return true;
  if (tab === 'active') return ACTIVE.includes(task.status);
  return task.status === tab;
}

const newestFirst = (a: TaskView, b: TaskView) => (a.createdAt === b.createdAt ? (a.id < b.id ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1);

/**
 * A list with tasks first seen live added in their place (newest first): those newer than the
 * oldest task loaded, or any when every page is loaded; an older one belongs to a page not loaded.
 */
export function withNewTasks<L extends { ids: string[]; nextCursor: string | null }>(list: L, fresh: readonly TaskView[], get: (id: string) => TaskView | undefined): L {
  const loaded = list.ids.map(get).filter((t): t is TaskView => t !== undefined);
  const oldest = loaded.at(-1);
  // (A task may come twice in `fresh`: submitted and moved in the same batch of changes.)
  const known = new Set(list.ids);
  const add = fresh.filter((t) => !known.has(t.id) && (list.nextCursor === null || !oldest || newestFirst(t, oldest) <= 0) && known.add(t.id));
  if (add.length === 0) return list;
  return { ...list, ids: [...loaded, ...add].sort(newestFirst).map((t) => t.id) };
}
