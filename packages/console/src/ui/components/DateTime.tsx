import { formatDateTime } from '../state/format.ts';

/** A date and time in the browser's zone, its zone written out: `2026-11-30 15:04:05 UTC+1`. */
export function DateTime({ iso }: { iso: string | null }) {
  if (!iso) return <span class="muted">—</span>;
  return (
    <time dateTime={iso} class="datetime">
      {formatDateTime(iso)}
    </time>
  );
}
