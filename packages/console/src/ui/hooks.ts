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
 * A call put off until `delayMs` after the last request for it (typing that settles): `later(fn)`
 * replaces any call still waiting, `cancel()` drops it; an unmounted component's is dropped too.
 */
export function useDebounced(delayMs: number): { later(fn: () => void): void; cancel(): void } {
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const cancel = () => {
    if (timer.current) clearTimeout(timer.current);
    timer.current = null;
  };
  useEffect(() => cancel, []);
  return {
    later(fn) {
      cancel();
      timer.current = setTimeout(fn, delayMs);
    },
    cancel,
  };
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

/** Where focus was in a region: the element, and the task of the row it was in, if any. */
export interface FocusPlace {
  element: HTMLElement;
  taskId: string | null;
}

const isDisabled = (element: HTMLElement) => (element as HTMLButtonElement).disabled === true;

/**
 * Keeps the keyboard user's place in a region whose controls come and go: the control that had
 * the focus is disabled while its request runs (the browser drops the focus then) or goes away
 * (a cancelled task's button, a row that left the tab). Once the region renders again, focus goes
 * back to the control when it is enabled again, or to `fallback(place)` when it is gone. Where
 * the user moves the focus themselves, nothing is kept. Spread the handlers on the region.
 */
export function useFocusKeeper(fallback: (place: FocusPlace) => HTMLElement | null) {
  const kept = useRef<FocusPlace | null>(null);
  useEffect(() => {
    const place = kept.current;
    if (!place) return;
    const at = document.activeElement;
    if (at !== null && at !== document.body) return;
    if (!place.element.isConnected) {
      kept.current = null;
      fallback(place)?.focus();
    } else if (!isDisabled(place.element)) {
      place.element.focus();
    }
  });
  return {
    onFocusIn(event: FocusEvent) {
      const element = event.target as HTMLElement;
      kept.current = { element, taskId: element.closest<HTMLElement>('[data-task-id]')?.dataset.taskId ?? null };
    },
    onFocusOut(event: FocusEvent) {
      // Still there and usable, the focus not taken by a dialog it opened: the user moved it away.
      const element = event.target as HTMLElement;
      const to = event.relatedTarget instanceof Element ? event.relatedTarget : null;
      if (to?.closest('dialog, [role="dialog"], [role="alertdialog"]')) return;
      // Looked at once the event is over: a browser may dispatch it while removing the element.
      queueMicrotask(() => {
        if (kept.current?.element === element && element.isConnected && !isDisabled(element)) kept.current = null;
      });
    },
  };
}
