import { useEffect, useState } from 'preact/hooks';
import { describeError } from '../../api/errors.ts';
import type { LogLine } from '../../api/types.ts';
import { useApp } from '../../app-context.ts';
import { ErrorNote } from '../../components/ErrorNote.tsx';
import { formatTime } from '../../state/format.ts';

/** The stored log lines of one item, oldest first; lines logged while it is open are appended live. */
export function ItemLogs({ taskId, itemId, id }: { taskId: string; itemId: string; id: string }) {
  const { api, itemEvents } = useApp();
  const [logs, setLogs] = useState<LogLine[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    const controller = new AbortController();
    setError(null);
    api.get<{ logs: LogLine[] }>(`/tasks/${encodeURIComponent(taskId)}/items/${encodeURIComponent(itemId)}/logs`, controller.signal).then(
      (answer) => setLogs(answer.logs),
      (e: unknown) => {
        if (!controller.signal.aborted) setError(describeError(e));
      },
    );
    return () => controller.abort();
  }, [api, taskId, itemId, attempt]);

  useEffect(
    () =>
      itemEvents.on((event) => {
        if (event.type !== 'item.log' || event.itemId !== itemId) return;
        const line: LogLine = { at: new Date(event.at).toISOString(), attempt: 0, message: event.message, ...(event.data ? { data: event.data } : {}) };
        setLogs((list) => (list ? [...list, line] : list));
      }),
    [itemEvents, itemId],
  );

  return (
    <div id={id} class="item-logs">
      {error ? <ErrorNote message={`The logs could not be loaded: ${error}`} retry={() => setAttempt((n) => n + 1)} /> : null}
      {!error && logs === null ? <p class="muted">Loading logs…</p> : null}
      {logs && logs.length === 0 ? <p class="muted">This item logged nothing.</p> : null}
      {logs && logs.length > 0 ? (
        <ol class="log-lines" aria-label="Log lines">
          {logs.map((l, i) => (
            <li key={i}>
              <time dateTime={l.at}>{formatTime(l.at)}</time>
              {l.attempt > 0 ? <span class="muted"> attempt {l.attempt}</span> : null}
              <span class="log-message"> {l.message}</span>
              {l.data ? <pre class="log-data">{JSON.stringify(l.data, null, 2)}</pre> : null}
            </li>
          ))}
        </ol>
      ) : null}
    </div>
  );
}
