import type { ColumnSpec } from '../../config.ts';
import { formatColumn } from '../state/columns.ts';
import { routeHash } from '../state/route.ts';

const TASK_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A column's value in a table cell: its text, or for a `task` column (a task id) a link to that task's page. */
export function ColumnValue({ root, column }: { root: unknown; column: ColumnSpec }) {
  const text = formatColumn(root, column);
  if (column.format !== 'task' || !TASK_ID.test(text)) return <>{text}</>;
  return (
    <a href={routeHash({ view: 'task', id: text, items: 'all' })} class="mono">
      {text}
    </a>
  );
}
