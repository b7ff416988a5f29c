export interface ToastInput {
  text: string;
  kind?: 'ok' | 'error';
}

export interface Toast extends Required<ToastInput> {
  id: number;
}

/**
 * The outcome of actions, in a polite live region: a screen reader reads each new toast once;
 * errors stay longer and can be dismissed.
 */
export function Toasts({ toasts, dismiss }: { toasts: Toast[]; dismiss(id: number): void }) {
  return (
    <div class="toasts" role="status" aria-live="polite" aria-relevant="additions text">
      {toasts.map((t) => (
        <div key={t.id} class={`toast toast-${t.kind}`}>
          <span>{t.text}</span>
          <button type="button" class="toast-close" aria-label="Dismiss message" onClick={() => dismiss(t.id)}>
            ×
          </button>
        </div>
      ))}
    </div>
  );
}
