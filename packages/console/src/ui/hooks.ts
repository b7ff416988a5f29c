import { useEffect, useRef, useState } from 'preact/hooks';
import type { TaskStore } from './state/task-store.ts';

/** Re-renders the component once per batch of store changes. */
export function useStoreVersion(store: TaskStore): number {
  const [version, setVersion] = useState(store.version);
  useEffect(() => store.subscribe(() => setVersion(store.version)), [store]);
  return version;
}

/** The current time, ticking every `intervalMs` while `enabled` (for elapsed times and rates). */
export function useNow(enabled: boolean, intervalMs = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!enabled) return;
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), intervalMs);
    return () => clearInterval(timer);
  }, [enabled, intervalMs]);
  return enabled ? now : Date.now();
}

/**
 * Returns a function that runs `fn` at most once per `intervalMs`: a call inside the interval
 * runs it at the interval's end, once however many calls came.
 */
export function useThrottled(fn: () => void, intervalMs: number): () => void {
  const fnRef = useRef(fn);
  fnRef.current = fn;
  const state = useRef<{ last: number; timer: ReturnType<typeof setTimeout> | null }>({ last: 0, timer: null });
  useEffect(
    () => () => {
      if (state.current.timer) clearTimeout(state.current.timer);
    },
    [],
  );
  const ref = useRef<() => void>(() => {});
  ref.current = () => {
    const s = state.current;
    if (s.timer) return;
    const wait = Math.max(0, s.last + intervalMs - Date.now());
    s.timer = setTimeout(() => {
      s.timer = null;
      s.last = Date.now();
      fnRef.current();
    }, wait);
  };
  return useRef(() => ref.current()).current;
}
