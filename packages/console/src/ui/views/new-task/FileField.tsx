import { useId, useRef, useState } from 'preact/hooks';
import type { FieldSpec } from '../../../config.ts';
import { describeError } from '../../api/errors.ts';
import { useApp } from '../../app-context.ts';
import { FieldErrors, invalidProps } from './FieldErrors.tsx';

type Spec = Extract<FieldSpec, { kind: 'file' }>;

/** A file, uploaded as soon as it is chosen; the field's value is the id the upload answered. */
export function FileField({ spec, errors, onChange, onBusy }: { spec: Spec; errors: string[] | undefined; onChange(id: string | null): void; onBusy(busy: boolean): void }) {
  const { api } = useApp();
  const id = useId();
  const [state, setState] = useState<{ kind: 'idle' } | { kind: 'uploading'; name: string } | { kind: 'done'; name: string } | { kind: 'error'; message: string }>({ kind: 'idle' });
  const current = useRef<AbortController | null>(null);

  const upload = async (file: File | undefined) => {
    current.current?.abort();
    onChange(null);
    if (!file) {
      setState({ kind: 'idle' });
      return;
    }
    const controller = new AbortController();
    current.current = controller;
    setState({ kind: 'uploading', name: file.name });
    onBusy(true);
    try {
      const answer = await api.upload<Record<string, unknown>>(spec.upload.path, file, controller.signal);
      const value = answer[spec.upload.idField];
      if (value === undefined || value === null) throw new Error(`The upload's answer has no "${spec.upload.idField}".`);
      onChange(String(value));
      setState({ kind: 'done', name: file.name });
    } catch (error) {
      if (controller.signal.aborted) return;
      setState({ kind: 'error', message: `The upload failed: ${describeError(error)}` });
    } finally {
      if (current.current === controller) onBusy(false);
    }
  };

  const all = state.kind === 'error' ? [state.message, ...(errors ?? [])] : errors;
  return (
    <div class="field">
      <label for={id}>
        {spec.label}
        {spec.required ? <span class="required"> (required)</span> : null}
      </label>
      <input id={id} type="file" accept={spec.accept} onChange={(e) => void upload(e.currentTarget.files?.[0])} {...invalidProps(`${id}-errors`, all, `${id}-state`)} />
      <p id={`${id}-state`} class="hint" role="status">
        {state.kind === 'uploading' ? `Uploading ${state.name}…` : state.kind === 'done' ? `Uploaded ${state.name}.` : ''}
      </p>
      <FieldErrors id={`${id}-errors`} errors={all} />
    </div>
  );
}
