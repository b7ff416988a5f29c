import { useId } from 'preact/hooks';
import type { FieldSpec } from '../../../config.ts';
import { ErrorNote } from '../../components/ErrorNote.tsx';
import { FieldErrors, invalidProps } from './FieldErrors.tsx';
import { useSource } from './use-source.ts';

type Spec = Extract<FieldSpec, { kind: 'select' }>;

export function SelectField({ spec, value, errors, onChange }: { spec: Spec; value: string; errors: string[] | undefined; onChange(v: string): void }) {
  const { entries, loading, error, reload } = useSource(spec.source);
  const id = useId();
  return (
    <div class="field">
      <label for={id}>
        {spec.label}
        {spec.required ? <span class="required"> (required)</span> : null}
      </label>
      {error ? <ErrorNote message={`The choices could not be loaded: ${error}`} retry={reload} /> : null}
      <select id={id} value={value} disabled={loading} required={spec.required} onChange={(e) => onChange(e.currentTarget.value)} {...invalidProps(`${id}-errors`, errors)}>
        <option value="">{loading ? 'Loading…' : 'Choose…'}</option>
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
