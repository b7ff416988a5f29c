import { useEffect, useId, useRef } from 'preact/hooks';
import type { FieldSpec } from '../../../config.ts';
import { ErrorNote } from '../../components/ErrorNote.tsx';
import { FieldErrors, invalidProps } from './FieldErrors.tsx';
import { useSource } from './use-source.ts';

type Spec = Extract<FieldSpec, { kind: 'select' }>;

/**
 * A drop-down list. Its source may name an earlier field (`/studies/{studyId}/rule-sets`): until that
 * field has a value the list offers nothing but a note to choose it first (`waitingFor`: its label),
 * a choice is cleared when that field changes (it was one of the other list's), and a choice the
 * list no longer holds once it loads again is cleared too.
 */
export function SelectField({ spec, value, path, waitingFor, errors, onChange }: { spec: Spec; value: string; path: string | null; waitingFor: string | null; errors: string[] | undefined; onChange(v: string): void }) {
  const { entries, loading, error, reload } = useSource(spec.source, path);
  const id = useId();
  const shownPath = useRef(path);
  useEffect(() => {
    if (shownPath.current === path) return;
    shownPath.current = path;
    if (value !== '') onChange('');
  }, [path]);
  useEffect(() => {
    if (value !== '' && !loading && !error && !entries.some((e) => e.value === value)) onChange('');
  }, [value, loading, error, entries]);
  return (
    <div class="field">
      <label for={id}>
        {spec.label}
        {spec.required ? <span class="required"> (required)</span> : null}
      </label>
      {error ? <ErrorNote message={`The choices could not be loaded: ${error}`} retry={reload} /> : null}
      {/* Waiting for another field, it stays focusable: its one option says what to choose first. */}
      <select id={id} value={value} disabled={loading && path !== null} required={spec.required} onChange={(e) => onChange(e.currentTarget.value)} {...invalidProps(`${id}-errors`, errors)}>
        <option value="">{path === null ? `First choose: ${waitingFor ?? 'the field it depends on'}` : loading ? 'Loading…' : 'Choose…'}</option>
        {entries.map((e) => (
          <option key={e.value} value={e.value}>
            {e.detail ? `${e.label} (${e.detail})` : e.label}
          </option>
        ))}
      </select>
      <FieldErrors id={`${id}-errors`} errors={errors} />
    </div>
  );
}
