import { useCallback, useEffect, useState } from 'preact/hooks';
import { MAX_SOURCE_ENTRIES, type Source } from '../../../config.ts';
import { describeError, isAbort } from '../../api/errors.ts';
import { useApp } from '../../app-context.ts';
import { nextCursorOf, pagePath, sourceEntries } from '../../state/new-task.ts';

export interface SourceEntry {
  value: string;
  label: string;
  detail: string | null;
}

interface SourceState {
  entries: SourceEntry[];
  loading: boolean;
  error: string | null;
  /** A paged source had more than {@link MAX_SOURCE_ENTRIES} entries: the rest are not listed. */
  cut: boolean;
}

/**
 * The choices of a select or multiselect, loaded from `GET apiBase + path` (the source's path, its
 * fields filled in); a paged source (`source.next`) page after page, each shown as it arrives, up to
 * {@link MAX_SOURCE_ENTRIES}. With `path` null (a field it names has no value yet), no choices.
 */
export function useSource(source: Source, path: string | null = source.path) {
  const { api } = useApp();
  const [state, setState] = useState<SourceState>({ entries: [], loading: path !== null, error: null, cut: false });
  const [attempt, setAttempt] = useState(0);
  useEffect(() => {
    if (path === null) {
      setState({ entries: [], loading: false, error: null, cut: false });
      return;
    }
    const controller = new AbortController();
    setState((s) => ({ ...s, loading: true, error: null }));
    void (async () => {
      const entries: SourceEntry[] = [];
      const seen = new Set<string>();
      let cursor: string | null = null;
      try {
        for (;;) {
          const answer = await api.get<unknown>(pagePath(path, cursor), controller.signal);
          if (controller.signal.aborted) return;
          for (const entry of sourceEntries(answer, source)) {
            if (seen.has(entry.value)) continue;
            seen.add(entry.value);
            entries.push(entry);
          }
          cursor = nextCursorOf(answer, source);
          // Only a paged source is capped: one answer is all the choices, however many.
          const cut = source.next !== undefined && (entries.length > MAX_SOURCE_ENTRIES || (cursor !== null && entries.length >= MAX_SOURCE_ENTRIES));
          const done = cursor === null || cut;
          setState({ entries: cut ? entries.slice(0, MAX_SOURCE_ENTRIES) : [...entries], loading: !done, error: null, cut });
          if (done) return;
        }
      } catch (error) {
        if (!isAbort(error) && !controller.signal.aborted) setState({ entries: [...entries], loading: false, error: describeError(error), cut: false });
      }
    })();
    return () => controller.abort();
  }, [api, source, path, attempt]);
  const reload = useCallback(() => setAttempt((n) => n + 1), []);
  return { ...state, reload };
}
