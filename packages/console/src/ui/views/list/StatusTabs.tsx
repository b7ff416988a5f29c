import type { TaskSummary } from '../../api/types.ts';
import { formatCount } from '../../state/format.ts';
import { routeHash } from '../../state/route.ts';
import { TABS, tabCount, type ListTab } from '../../state/tabs.ts';

/** The status filters as links (each is a URL), the current one marked, with their counts. */
export function StatusTabs({ tab, q, summary }: { tab: ListTab; q: string; summary: TaskSummary['counts'] | null }) {
  return (
    <nav aria-label="Task status" class="tabs">
      <ul>
        {TABS.map((t) => (
          <li key={t.tab}>
            <a href={routeHash({ view: 'tasks', tab: t.tab, q })} aria-current={t.tab === tab ? 'page' : undefined}>
              {t.label}
              {summary ? <span class="count"> {formatCount(tabCount(t.tab, summary))}</span> : null}
            </a>
          </li>
        ))}
      </ul>
    </nav>
  );
}
