import type { ItemCounts } from '../../api/types.ts';
import { formatCount, formatTime } from '../../state/format.ts';

/** Items by state right now: never started, running, waiting for a retry (and when), settled. */
export function CountsGrid({ counts }: { counts: ItemCounts | null }) {
  const n = (v: number | undefined) => (counts ? formatCount(v ?? 0) : '…');
  return (
    <dl class="counts-grid">
      <div class="count-tile">
        <dt>Queued</dt>
        <dd>{n(counts?.queued)}</dd>
        <dd class="hint">not started</dd>
      </div>
      <div class="count-tile">
        <dt>Running</dt>
        <dd>{n(counts?.running)}</dd>
      </div>
      <div class="count-tile">
        <dt>Waiting to retry</dt>
        <dd>{n(counts?.waitingRetry)}</dd>
        <dd class="hint">{counts?.nextRetryAt ? `next at ${formatTime(counts.nextRetryAt)}` : '\u00a0'}</dd>
      </div>
      <div class="count-tile tile-ok">
        <dt>Succeeded</dt>
        <dd>{n(counts?.succeeded)}</dd>
      </div>
      <div class={`count-tile${counts && counts.failed > 0 ? ' tile-bad' : ''}`}>
        <dt>Failed</dt>
        <dd>{n(counts?.failed)}</dd>
        <dd class="hint">{counts && counts.failed > 0 ? `${formatCount(counts.retryableFailed)} retryable` : '\u00a0'}</dd>
      </div>
      <div class="count-tile">
        <dt>Cancelled</dt>
        <dd>{n(counts?.cancelled)}</dd>
      </div>
      <div class="count-tile">
        <dt>Total</dt>
        <dd>{n(counts?.total)}</dd>
      </div>
    </dl>
  );
}
