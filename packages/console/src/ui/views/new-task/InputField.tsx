import { useId } from 'preact/hooks';
import type { FieldSpec } from '../../../config.ts';
import { FieldErrors, invalidProps } from './FieldErrors.tsx';

type Spec = Extract<FieldSpec, { kind: 'text' | 'number' }>;

/** A text or number field. */
export function InputField({ spec, value, errors, onChange }: { spec: Spec; value: string; errors: string[] | undefined; onChange(v: string): void }) {
  const id = useId();
  return (
    <div class="field">
      <label for={id}>
        {spec.label}
        {spec.required ? <span class="required"> (required)</span> : null}
      </label>
      {spec.kind === 'number' ? (
        <input
          id={id}
          type="number"
          inputMode="decimal"
          step="any"
          value={value}
          required={spec.required}
          min={spec.min}
          max={spec.max}
          onInput={(e) => onChange(e.currentTarget.value)}
          {...invalidProps(`${id}-errors`, errors)}
        />
      ) : (
        <input
          id={id}
          type="text"
          value={value}
          required={spec.required}
          placeholder={spec.placeholder}
          onInput={(e) => onChange(e.currentTarget.value)}
          {...invalidProps(`${id}-errors`, errors)}
        />
      )}
      <FieldErrors id={`${id}-errors`} errors={errors} />
    </div>
  );
}
