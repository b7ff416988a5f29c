import { useId, useMemo, useState } from 'preact/hooks';
import type { FieldSpec } from '../../../config.ts';
import { ErrorNote } from '../../components/ErrorNote.tsx';
import { formatCount } from '../../state/format.ts';
import { FieldErrors } from './FieldErrors.tsx';
import { useSource } from './use-source.ts';

type Spec = Extract<FieldSpec, { kind: 'multiselect' }>;

/** A checkbox list with a filter box, "Select all" (of what the filter shows) and "Clear". */
export function MultiSelectField({ spec, value, errors, onChange }: { spec: Spec; value: string[]; errors: string[] | undefined; onChange(v: string[]): void }) {
  const { entries, loading, error, cut, reload } = useSource(spec.source);
  const [filter, setFilter] = useState('');
  const id = useId();
  const chosen = useMemo(() => new Set(value), [value]);
  const shown = useMemo(() => {
    const f = filter.trim().toLowerCase();
    return f ? entries.filter((e) => e.label.toLowerCase().includes(f) || (e.detail ?? '').toLowerCase().includes(f) || e.value.toLowerCase().includes(f)) : entries;
  }, [entries, filter]);
  const toggle = (v: string, on: boolean) => onChange(on ? [...value, v] : value.filter((x) => x !== v));
  const selectShown = () => onChange([...value, ...shown.map((e) => e.value).filter((v) => !chosen.has(v))]);

  return (
    <fieldset class="field multiselect" aria-describedby={`${id}-count${errors?.length ? ` ${id}-errors` : ''}`} aria-invalid={errors?.length ? true : undefined}>
      <legend>{spec.label}</legend>
      {error ? <ErrorNote message={`The choices could not be loaded: ${error}`} retry={reload} /> : null}
      <div class="ms-tools">
        <label class="sr-only" for={`${id}-filter`}>
          Filter {spec.label}
        </label>
        <input id={`${id}-filter`} type="search" placeholder="Filter…" value={filter} autocomplete="off" onInput={(e) => setFilter(e.currentTarget.value)} />
        <button type="button" class="small" disabled={shown.length === 0} onClick={selectShown}>
          {filter.trim() ? 'Select shown' : 'Select all'}
        </button>
        <button type="button" class="small" disabled={value.length === 0} onClick={() => onChange([])}>
          Clear
        </button>
      </div>
      <p id={`${id}-count`} class="hint">
        {loading && entries.length === 0 ? 'Loading…' : `${formatCount(value.length)} of ${formatCount(entries.length)} selected${loading ? ' (loading more…)' : ''}`}
        {cut ? ` (only the first ${formatCount(entries.length)} are listed; a larger task is submitted through the API)` : ''}
        {spec.max !== undefined ? ` (at most ${formatCount(spec.max)})` : ''}
      </p>
      <div class="ms-list">
        {!loading && entries.length === 0 && !error ? <p class="empty">Nothing to choose from yet.</p> : null}
        {entries.length > 0 && shown.length === 0 ? <p class="empty">Nothing matches the filter{loading ? ' yet' : ''}.</p> : null}
        {shown.map((e) => (
          <label key={e.value} class="ms-entry">
            <input type="checkbox" value={e.value} checked={chosen.has(e.value)} onChange={(ev) => toggle(e.value, ev.currentTarget.checked)} />
            <span class="ms-label">{e.label}</span>
            {e.detail ? <span class="ms-detail">{e.detail}</span> : null}
          </label>
        ))}
      </div>
      <FieldErrors id={`${id}-errors`} errors={errors} />
    </fieldset>
  );
}
