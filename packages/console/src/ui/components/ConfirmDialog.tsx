import { useEffect, useId, useRef } from 'preact/hooks';

export interface ConfirmRequest {
  title: string;
  body: string;
  /** The confirming button's text: "Cancel task", "Delete task". */
  confirmLabel: string;
  /** The button that backs out. @default 'Keep it' */
  dismissLabel?: string;
}

/**
 * A modal confirmation on the native `<dialog>` (focus trapped, Escape backs out, focus returns
 * to the button that asked). Focus starts on the safe choice.
 */
export function ConfirmDialog({ request, answer }: { request: ConfirmRequest | null; answer(ok: boolean): void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const safe = useRef<HTMLButtonElement>(null);
  const titleId = useId();
  const bodyId = useId();

  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (request && !dialog.open) {
      dialog.showModal();
      safe.current?.focus();
    } else if (!request && dialog.open) dialog.close();
  }, [request]);

  return (
    <dialog
      ref={ref}
      class="confirm"
      aria-labelledby={titleId}
      aria-describedby={bodyId}
      onCancel={(e) => {
        e.preventDefault();
        answer(false);
      }}
    >
      {request ? (
        <form
          method="dialog"
          onSubmit={(e) => {
            e.preventDefault();
            answer(true);
          }}
        >
          <h2 id={titleId}>{request.title}</h2>
          <p id={bodyId}>{request.body}</p>
          <div class="dialog-buttons">
            <button type="button" ref={safe} onClick={() => answer(false)}>
              {request.dismissLabel ?? 'Keep it'}
            </button>
            <button type="submit" class="danger">
              {request.confirmLabel}
            </button>
          </div>
        </form>
      ) : null}
    </dialog>
  );
}
