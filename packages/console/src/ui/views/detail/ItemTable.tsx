import { Fragment } from 'preact';
import type { ColumnSpec } from '../../../config.ts';
import type { ItemView, TaskView } from '../../api/types.ts';
import { ColumnValue } from '../../components/ColumnValue.tsx';
import { formatColumn } from '../../state/columns.ts';
import { formatDuration, formatTime, zoneOf } from '../../state/format.ts';
import { canRetryItem } from '../../state/status.ts';
import { ItemLogs } from './ItemLogs.tsx';

export interface ItemTableProps {
  task: TaskView;
  items: ItemView[];
  columns: ColumnSpec[];
  expanded: ReadonlySet<string>;
  toggle(itemId: string): void;
  retrying: ReadonlySet<string>;
  retry(item: ItemView): void;
  label: string;
}

function ItemStatus({ item }: { item: ItemView }) {
  const waiting = item.status === 'pending' && item.nextAttemptAt;
  return (
    <span class={`item-status is-${item.status}`}>
      {waiting ? 'waiting' : item.status}
      {waiting ? <span class="hint"> retry at {formatTime(item.nextAttemptAt)}</span> : null}
    </span>
  );
}

/** The items of a task: one row each, its logs unfolded below it on demand. */
export function ItemTable({ task, items, columns, expanded, toggle, retrying, retry, label }: ItemTableProps) {
  const zone = zoneOf();
  const width = 8 + columns.length;
  return (
    <div class="table-scroll" role="region" aria-label={label} tabIndex={0}>
      <table class="items">
        <thead>
          <tr>
            <th scope="col" class="num">
              #
            </th>
            <th scope="col">Key</th>
            <th scope="col">Status</th>
            <th scope="col" class="num">
              Attempts
            </th>
            <th scope="col">Started ({zone})</th>
            <th scope="col" class="num">
              Duration
            </th>
            <th scope="col">Error</th>
            {columns.map((c) => (
              <th scope="col" key={c.path} class={c.format === 'number' || c.format === 'ms' ? 'num' : undefined}>
                {c.label}
              </th>
            ))}
            <th scope="col">
              <span class="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {items.map((item) => {
            const open = expanded.has(item.id);
            const logsId = `logs-${item.id}`;
            return (
              <Fragment key={item.id}>
                <tr class={open ? 'open' : undefined} data-item-id={item.id}>
                  <td class="num">{item.seq}</td>
                  <th scope="row" class="mono key">
                    {item.key}
                  </th>
                  <td>
                    <ItemStatus item={item} />
                  </td>
                  <td class="num">{item.attempts}</td>
                  <td>{item.startedAt ? <time dateTime={item.startedAt}>{formatTime(item.startedAt)}</time> : '—'}</td>
                  <td class="num">{formatDuration(item.durationMs)}</td>
                  <td class="wrap error-cell">
                    {item.error ? (
                      <>
                        {/* Any item but a failed one shows the error of an attempt before (a cancel writes none). */}
                        {item.status === 'failed' ? null : <span class="hint">{item.error.attempt ? `Attempt ${item.error.attempt}: ` : 'An earlier attempt: '}</span>}
                        <code>{item.error.code}</code> {item.error.message}
                        {item.error.retryable === false ? <span class="hint"> (permanent)</span> : null}
                      </>
                    ) : (
                      '—'
                    )}
                  </td>
                  {columns.map((c) => {
                    const text = formatColumn(item, c);
                    // Short values (file names, codes) stay on one line; long ones wrap.
                    const cls = c.format === 'number' || c.format === 'ms' ? 'num' : c.format === 'json' ? 'mono wrap' : text.length > 40 ? 'wrap' : undefined;
                    return (
                      <td key={c.path} class={cls}>
                        <ColumnValue root={item} column={c} />
                      </td>
                    );
                  })}
                  <td>
                    <span class="row-actions">
                    <button type="button" class="small" aria-expanded={open} aria-controls={open ? logsId : undefined} aria-label={`${open ? 'Hide' : 'Show'} logs of item ${item.key}`} onClick={() => toggle(item.id)}>
                      Logs
                    </button>
                    {canRetryItem(task, item) ? (
                      <button type="button" class="small" disabled={retrying.has(item.id)} aria-label={`Retry item ${item.key}`} onClick={() => retry(item)}>
                        {retrying.has(item.id) ? 'Retrying…' : 'Retry'}
                      </button>
                    ) : null}
                    </span>
                  </td>
                </tr>
                {open ? (
                  <tr class="logs-row">
                    <td colSpan={width}>
                      <ItemLogs taskId={task.id} itemId={item.id} id={logsId} />
                    </td>
                  </tr>
                ) : null}
              </Fragment>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
