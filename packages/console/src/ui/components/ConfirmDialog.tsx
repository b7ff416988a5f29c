import { useEffect, useId, useRef, useState } from 'preact/hooks';

export interface ConfirmRequest {
  title: string;
  body: string;
  /** The confirming button's text: "Cancel task", "Delete task". */
  confirmLabel: string;
  /** The button that backs out. @default 'Keep it' */
  dismissLabel?: string;
  /** Ask for a text too (the box's label); the confirming button needs it filled. */
  prompt?: string;
  /** The confirming button's tone. @default 'danger' */
  tone?: 'danger' | 'primary';
}

/**
 * A modal confirmation on the native `<dialog>` (focus trapped, Escape backs out, focus returns
 * to the button that asked). Focus starts on the safe choice.
 */
export function ConfirmDialog({ request, answer }: { request: ConfirmRequest | null; answer(ok: boolean, text?: string): void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const safe = useRef<HTMLButtonElement>(null);
  const input = useRef<HTMLTextAreaElement>(null);
  const titleId = useId();
  const bodyId = useId();
  const inputId = useId();
  const [text, setText] = useState('');

  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (request && !dialog.open) {
      setText('');
      dialog.showModal();
      // With a box to fill, start there; otherwise on the safe choice.
      (request.prompt ? input.current : safe.current)?.focus();
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
            if (request.prompt && !text.trim()) return;
            answer(true, request.prompt ? text.trim() : undefined);
          }}
        >
          <h2 id={titleId}>{request.title}</h2>
          <p id={bodyId}>{request.body}</p>
          {request.prompt ? (
            <div class="field">
              <label for={inputId}>{request.prompt}</label>
              <textarea id={inputId} ref={input} rows={3} required value={text} onInput={(e) => setText(e.currentTarget.value)} />
            </div>
          ) : null}
          <div class="dialog-buttons">
            <button type="button" ref={safe} onClick={() => answer(false)}>
              {request.dismissLabel ?? 'Keep it'}
            </button>
            <button type="submit" class={request.tone ?? 'danger'} disabled={request.prompt !== undefined && !text.trim()}>
              {request.confirmLabel}
            </button>
          </div>
        </form>
      ) : null}
    </dialog>
  );
}
