import type { ItemCounts } from '../../api/types.ts';
import { formatCount } from '../../state/format.ts';
import { routeHash, type ItemTab } from '../../state/route.ts';

const FILTERS: { tab: ItemTab; label: string; count(c: ItemCounts): number }[] = [
  { tab: 'all', label: 'All', count: (c) => c.total },
  { tab: 'pending', label: 'Pending', count: (c) => c.queued + c.waitingRetry },
  { tab: 'waiting', label: 'Waiting to retry', count: (c) => c.waitingRetry },
  { tab: 'running', label: 'Running', count: (c) => c.running },
  { tab: 'succeeded', label: 'Succeeded', count: (c) => c.succeeded },
  { tab: 'failed', label: 'Failed', count: (c) => c.failed },
  { tab: 'cancelled', label: 'Cancelled', count: (c) => c.cancelled },
];

export const itemFilterLabel = (tab: ItemTab): string => FILTERS.find((f) => f.tab === tab)!.label;

/** The item status filter: links (each a URL), the current one marked, with counts. */
export function ItemFilters({ taskId, current, counts }: { taskId: string; current: ItemTab; counts: ItemCounts | null }) {
  return (
    <nav aria-label="Item status" class="tabs">
      <ul>
        {FILTERS.map((f) => (
          <li key={f.tab}>
            <a href={routeHash({ view: 'task', id: taskId, items: f.tab })} aria-current={f.tab === current ? 'page' : undefined}>
              {f.label}
              {counts ? <span class="count"> {formatCount(f.count(counts))}</span> : null}
            </a>
          </li>
        ))}
      </ul>
    </nav>
  );
}
