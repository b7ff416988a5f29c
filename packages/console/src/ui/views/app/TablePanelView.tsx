import { useCallback, useEffect, useId, useRef, useState } from 'preact/hooks';
import type { RowAction, TablePanel } from '../../../config.ts';
import { ApiError, describeError, isAbort } from '../../api/errors.ts';
import { useApp } from '../../app-context.ts';
import { ColumnValue } from '../../components/ColumnValue.tsx';
import { ErrorNote } from '../../components/ErrorNote.tsx';
import { useDebounced, useThrottled } from '../../hooks.ts';
import { formatColumn, valueAt } from '../../state/columns.ts';
import { fillPath, withQuery } from '../../state/template.ts';

type Row = Record<string, unknown>;

const actionOffered = (action: RowAction, row: Row) => !action.when || action.when.values.includes(String(valueAt(row, action.when.field) ?? ''));

/** How a row's buttons name it: its `rowName` fields, else its first column, else its position. */
function rowName(panel: TablePanel, row: Row, index: number): string {
  if (panel.rowName && panel.rowName.length > 0) {
    return panel.rowName
      .map((path) => valueAt(row, path))
      .filter((v) => v !== undefined && v !== null && v !== '')
      .map(String)
      .join(' ');
  }
  return panel.columns[0] ? formatColumn(row, panel.columns[0]) : String(index + 1);
}

/**
 * A table of the app's own data, from one of its routes: filters as query parameters, pages by
 * `nextCursor`, a button per row action. On a task's page `{id}` is the task's id, a `live` panel
 * is asked again (at most every 2 s) while the task's counters move (`version`), and every panel
 * as soon as one of the app's actions on the task ran (`appTurn`; a row action here says so by
 * `appDone`).
 */
export function TablePanelView({ panel, taskId, version, appTurn, appDone }: { panel: TablePanel; taskId?: string; version?: string; appTurn?: number; appDone?(): void }) {
  const { api, toast, confirm, ask } = useApp();
  const headingId = useId();
  const [filters, setFilters] = useState<Record<string, string>>({});
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const [page, setPage] = useState<{ rows: Row[]; nextCursor: string | null } | null>(null);
  const [error, setError] = useState<string | null>(null);
  // On a task's page, the app's answer that it has nothing of this task (yet): its 404's message.
  const [missing, setMissing] = useState<string | null>(null);
  const missingRef = useRef(missing);
  missingRef.current = missing;
  // (The effect below asks again on `version` only: a 404 whose message changes is not a reason.)
  const [busy, setBusy] = useState<string | null>(null);
  const request = useRef<AbortController | null>(null);
  const cursor = cursors[cursors.length - 1] ?? null;
  const base = fillPath(panel.source.path, { id: taskId });

  const load = useCallback(async () => {
    if (!base) return;
    request.current?.abort();
    if (panel.filters?.some((f) => f.required && !filters[f.name]?.trim())) {
      setPage({ rows: [], nextCursor: null });
      setError(null);
      setMissing(null);
      return;
    }
    const controller = new AbortController();
    request.current = controller;
    try {
      const answer = await api.get<Record<string, unknown>>(withQuery(base, { ...filters, cursor }), controller.signal);
      const rows = answer[panel.source.list];
      setPage({ rows: Array.isArray(rows) ? (rows as Row[]) : [], nextCursor: typeof answer.nextCursor === 'string' ? answer.nextCursor : null });
      setError(null);
      setMissing(null);
    } catch (e) {
      if (isAbort(e)) return;
      // What an app keeps of a task is made by its manager: a queued task has none yet, and one
      // whose manager failed never will. Said as the app says it, not as a failure to load.
      // (A path no route serves, `no_route`, is the console's configuration's mistake: an error.)
      if (taskId !== undefined && e instanceof ApiError && e.status === 404 && e.code !== 'no_route') {
        setPage({ rows: [], nextCursor: null });
        setMissing(e.message);
        setError(null);
        return;
      }
      setMissing(null);
      setError(describeError(e));
    }
  }, [api, base, filters, cursor, panel.source.list, panel.filters, taskId]);

  useEffect(() => {
    void load();
    return () => request.current?.abort();
  }, [load]);
  const reloadSoon = useThrottled(() => void load(), 2000);
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    // A panel with nothing of the task yet is asked again as the task moves, live or not.
    if (panel.live || missingRef.current !== null) reloadSoon();
  }, [version, panel.live, reloadSoon]);
  const turnSeen = useRef(appTurn);
  useEffect(() => {
    if (turnSeen.current === appTurn) return;
    turnSeen.current = appTurn;
    void load();
  }, [appTurn, load]);

  const setFilter = (name: string, value: string) => {
    setFilters((f) => ({ ...f, [name]: value }));
    setCursors([null]);
  };

  const act = async (action: RowAction, row: Row, key: string) => {
    // On a task's page `{id}` is the task's; on a page of the app's own, the row's.
    const path = fillPath(action.path, taskId === undefined ? row : { ...row, id: taskId });
    if (!path) {
      toast({ kind: 'error', text: `${action.label} failed: this row lacks a field of ${action.path}.` });
      return;
    }
    let text: string | null = null;
    if (action.prompt) {
      text = await ask({ title: action.label, body: action.confirm ?? `${action.label}: say why.`, prompt: action.prompt, confirmLabel: action.label, tone: 'primary' });
      if (text === null) return;
    } else if (action.confirm && !(await confirm({ title: action.label, body: action.confirm, confirmLabel: action.label }))) {
      return;
    }
    setBusy(key);
    try {
      await api.send(action.method, path, text === null ? undefined : { text });
      toast({ text: `${action.label}: done.` });
      if (appDone) appDone();
      else void load();
    } catch (e) {
      toast({ kind: 'error', text: `${action.label} failed: ${describeError(e)}` });
    } finally {
      setBusy(null);
    }
  };

  const pageNumber = cursors.length;
  const actions = panel.rowActions ?? [];
  return (
    <section class="panel app-panel" aria-labelledby={headingId}>
      <h2 id={headingId}>{panel.title}</h2>
      {panel.filters && panel.filters.length > 0 ? (
        <div class="panel-filters" role="group" aria-label={`Filters of ${panel.title}`}>
          {panel.filters.map((f) => (
            <label key={f.name}>
              <span>
                {f.label}
                {f.required ? <span class="required"> (required)</span> : null}
              </span>
              {f.options ? (
                <select value={filters[f.name] ?? ''} onChange={(e) => setFilter(f.name, e.currentTarget.value)}>
                  <option value="">Any</option>
                  {f.options.map((o) => (
                    <option key={o} value={o}>
                      {o}
                    </option>
                  ))}
                </select>
              ) : (
                <TextFilter value={filters[f.name] ?? ''} onApply={(value) => setFilter(f.name, value)} />
              )}
            </label>
          ))}
        </div>
      ) : null}
      {error ? <ErrorNote message={`${panel.title} could not be loaded: ${error}`} retry={() => void load()} /> : null}
      {page === null && !error ? <p class="muted">Loading…</p> : null}
      {page && page.rows.length === 0 ? <p class="empty">{missing ?? panel.empty}</p> : null}
      {page && page.rows.length > 0 ? (
        <div class="table-scroll" role="region" aria-label={`${panel.title}, table`} tabIndex={0}>
          <table>
            <thead>
              <tr>
                {panel.columns.map((c) => (
                  <th key={c.path} scope="col" class={c.format === 'number' || c.format === 'ms' ? 'num' : undefined}>
                    {c.label}
                  </th>
                ))}
                {actions.length > 0 ? (
                  <th scope="col">
                    <span class="sr-only">Actions</span>
                  </th>
                ) : null}
              </tr>
            </thead>
            <tbody>
              {page.rows.map((row, i) => {
                const name = rowName(panel, row, i);
                return (
                  <tr key={i}>
                    {panel.columns.map((c) => (
                      <td key={c.path} class={c.format === 'number' || c.format === 'ms' ? 'num' : undefined}>
                        <ColumnValue root={row} column={c} />
                      </td>
                    ))}
                    {actions.length > 0 ? (
                      <td class="row-actions">
                        {actions
                          .filter((a) => actionOffered(a, row))
                          .map((a) => {
                            const key = `${i}:${a.label}`;
                            return (
                              <button key={a.label} type="button" class="small" disabled={busy !== null} aria-label={`${a.label}: ${name}`} onClick={() => void act(a, row, key)}>
                                {busy === key ? `${a.label}…` : a.label}
                              </button>
                            );
                          })}
                      </td>
                    ) : null}
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      ) : null}
      {page && (pageNumber > 1 || page.nextCursor) ? (
        <div class="pager">
          <button type="button" disabled={pageNumber <= 1} onClick={() => setCursors((c) => c.slice(0, -1))}>
            Previous page
          </button>
          <span>Page {pageNumber}</span>
          <button type="button" disabled={!page.nextCursor} onClick={() => page.nextCursor && setCursors((c) => [...c, page.nextCursor])}>
            Next page
          </button>
        </div>
      ) : null}
    </section>
  );
}

/** A text filter applied as you type (a moment after the last key), and at once on Enter or leaving it. */
function TextFilter({ value, onApply }: { value: string; onApply(value: string): void }) {
  const [text, setText] = useState(value);
  const typing = useDebounced(300);
  // What this field applied last: the value coming back from it is not a change from elsewhere,
  // and must not overwrite what was typed since.
  const applied = useRef(value);
  useEffect(() => {
    if (value !== applied.current) {
      applied.current = value;
      setText(value);
    }
  }, [value]);
  const apply = (next: string) => {
    typing.cancel();
    if (next === applied.current) return;
    applied.current = next;
    onApply(next);
  };
  return (
    <input
      type="search"
      value={text}
      onInput={(e) => {
        const next = e.currentTarget.value;
        setText(next);
        typing.later(() => apply(next));
      }}
      onChange={(e) => apply(e.currentTarget.value)}
    />
  );
}
