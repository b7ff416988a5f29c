import type { OptionValues } from '../../state/new-task.ts';
import { FieldErrors, invalidProps } from './FieldErrors.tsx';

const OPTIONS: { key: keyof OptionValues; error: string; label: string; hint: string; step: string }[] = [
  { key: 'maxFailures', error: 'options.maxFailures', label: 'Stop after this many failures', hint: 'Empty: no limit.', step: '1' },
  { key: 'maxFailureRatio', error: 'options.maxFailureRatio', label: 'Stop when failures pass this share (%)', hint: 'Empty: no limit.', step: 'any' },
  { key: 'deadlineMinutes', error: 'options.deadlineMs', label: 'Deadline (minutes from the start)', hint: 'Empty: no deadline.', step: 'any' },
];

/** The standard task options, folded away: tolerated failures and a deadline. */
export function OptionsFields({ values, errors, onChange }: { values: OptionValues; errors: Record<string, string[]>; onChange(v: OptionValues): void }) {
  const open = OPTIONS.some((o) => values[o.key] !== '' || errors[o.error]?.length);
  return (
    <details class="options" open={open || undefined}>
      <summary>Options</summary>
      {OPTIONS.map((o) => (
        <div class="field" key={o.key}>
          <label for={`opt-${o.key}`}>{o.label}</label>
          <input
            id={`opt-${o.key}`}
            type="number"
            min="0"
            step={o.step}
            inputMode="decimal"
            value={values[o.key]}
            onInput={(e) => onChange({ ...values, [o.key]: e.currentTarget.value })}
            {...invalidProps(`opt-${o.key}-errors`, errors[o.error], `opt-${o.key}-hint`)}
          />
          <span id={`opt-${o.key}-hint`} class="hint">
            {o.hint}
          </span>
          <FieldErrors id={`opt-${o.key}-errors`} errors={errors[o.error]} />
        </div>
      ))}
    </details>
  );
}
