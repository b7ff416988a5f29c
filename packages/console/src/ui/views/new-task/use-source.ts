import { useCallback, useEffect, useState } from 'preact/hooks';
import type { Source } from '../../../config.ts';
import { describeError, isAbort } from '../../api/errors.ts';
import { useApp } from '../../app-context.ts';
import { sourceEntries } from '../../state/new-task.ts';

export interface SourceEntry {
  value: string;
  label: string;
  detail: string | null;
}

/** The choices of a select or multiselect, loaded from `GET apiBase + source.path`. */
export function useSource(source: Source) {
  const { api } = useApp();
  const [state, setState] = useState<{ entries: SourceEntry[]; loading: boolean; error: string | null }>({ entries: [], loading: true, error: null });
  const [attempt, setAttempt] = useState(0);
  useEffect(() => {
    const controller = new AbortController();
    setState((s) => ({ ...s, loading: true, error: null }));
    api.get<unknown>(source.path, controller.signal).then(
      (answer) => {
        try {
          setState({ entries: sourceEntries(answer, source), loading: false, error: null });
        } catch (error) {
          setState({ entries: [], loading: false, error: describeError(error) });
        }
      },
      (error: unknown) => {
        if (!isAbort(error)) setState({ entries: [], loading: false, error: describeError(error) });
      },
    );
    return () => controller.abort();
  }, [api, source, attempt]);
  const reload = useCallback(() => setAttempt((n) => n + 1), []);
  return { ...state, reload };
}
