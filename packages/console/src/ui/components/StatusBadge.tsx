import type { TaskView } from '../api/types.ts';
import { presentStatus, type Tone } from '../state/status.ts';

// A glyph per tone, so the badge does not speak through colour alone.
const GLYPH: Record<Tone, string> = { neutral: '◷', active: '▶', ok: '✓', warn: '!', bad: '✕', muted: '■' };

export function StatusBadge({ task }: { task: TaskView }) {
  const p = presentStatus(task);
  return (
    <span class={`badge tone-${p.tone}`} data-status={task.status}>
      <span class="glyph" aria-hidden="true">
        {GLYPH[p.tone]}
      </span>
      <span class="status-label">{p.label}</span>
      {p.note ? <span class="status-note"> · {p.note}</span> : null}
    </span>
  );
}
