import type { OpsSnapshot } from '../../api/types.ts';
import { DateTime } from '../../components/DateTime.tsx';
import { formatAgo, formatCount, shortId } from '../../state/format.ts';

// The figures beside the meter say it in words; the meter is for the eye.
function Meter({ value, max }: { value: number; max: number }) {
  const pct = max > 0 ? Math.min(100, (value / max) * 100) : 0;
  return (
    <span class="meter" aria-hidden="true">
      <span class="meter-fill" style={{ width: `${pct}%` }} />
    </span>
  );
}

/** Queues, workers, limits and recoveries as tables. */
export function OpsTables({ snapshot, now }: { snapshot: OpsSnapshot; now: number }) {
  const r = snapshot.recoveries;
  return (
    <div class="ops-grid">
      <section class="panel" aria-labelledby="queues-heading">
        <h2 id="queues-heading">Queues</h2>
        <div class="table-scroll" role="region" aria-label="Queues, table" tabIndex={0}>
          <table>
            <thead>
              <tr>
                <th scope="col">Queue</th>
                <th scope="col" class="num">Queued</th>
                <th scope="col" class="num">Active</th>
                <th scope="col" class="num">Deferred</th>
                <th scope="col" class="num">Dead letters</th>
              </tr>
            </thead>
            <tbody>
              {snapshot.queues.map((q) => (
                <tr key={q.name}>
                  <th scope="row" class="mono">
                    {q.name}
                  </th>
                  <td class="num">{formatCount(q.queued)}</td>
                  <td class="num">{formatCount(q.active)}</td>
                  <td class="num">{formatCount(q.deferred)}</td>
                  <td class={`num${q.deadLetter > 0 ? ' c-bad' : ''}`}>{formatCount(q.deadLetter)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        <p class="hint">Deferred: waiting for a retry or a start time.</p>
      </section>

      <section class="panel" aria-labelledby="limits-heading">
        <h2 id="limits-heading">Limits</h2>
        {snapshot.limits.length === 0 ? <p class="empty">No global or rate limits.</p> : null}
        {snapshot.limits.length > 0 ? (
          <div class="table-scroll" role="region" aria-label="Limits, table" tabIndex={0}>
            <table>
              <thead>
                <tr>
                  <th scope="col">Limit</th>
                  <th scope="col">Kind</th>
                  <th scope="col">In use</th>
                  <th scope="col" class="num">Waiting</th>
                </tr>
              </thead>
              <tbody>
                {snapshot.limits.map((l) => (
                  <tr key={l.name}>
                    <th scope="row" class="mono">
                      {l.name}
                    </th>
                    <td>{l.kind}</td>
                    <td>
                      <span class="meter-cell">
                        <Meter value={l.inUse} max={l.limit} />
                        <span>
                          {formatCount(l.inUse)} / {formatCount(l.limit)}
                        </span>
                      </span>
                    </td>
                    <td class={`num${l.waiting > 0 ? ' c-warn' : ''}`}>{formatCount(l.waiting)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : null}
        <h2 id="recoveries-heading">Recoveries</h2>
        <dl class="facts recoveries" aria-labelledby="recoveries-heading">
          <div>
            <dt>Lapsed leases requeued</dt>
            <dd>{formatCount(r.lapsedRequeued)}</dd>
          </div>
          <div>
            <dt>Lapsed leases failed</dt>
            <dd>{formatCount(r.lapsedFailed)}</dd>
          </div>
          <div>
            <dt>Orphans requeued</dt>
            <dd>{formatCount(r.orphansRequeued)}</dd>
          </div>
          <div>
            <dt>Counters repaired</dt>
            <dd>{formatCount(r.countersRepaired)}</dd>
          </div>
          <div>
            <dt>Dead-lettered</dt>
            <dd class={r.deadLettered > 0 ? 'c-bad' : undefined}>{formatCount(r.deadLettered)}</dd>
          </div>
        </dl>
      </section>

      <section class="panel wide" aria-labelledby="workers-heading">
        <h2 id="workers-heading">Workers</h2>
        {snapshot.workers.length === 0 ? <p class="empty">No worker has reported.</p> : null}
        {snapshot.workers.length > 0 ? (
          <div class="table-scroll" role="region" aria-label="Workers, table" tabIndex={0}>
            <table>
              <thead>
                <tr>
                  <th scope="col">Worker</th>
                  <th scope="col">Role</th>
                  <th scope="col">Host and process</th>
                  <th scope="col">State</th>
                  <th scope="col">In flight / concurrency</th>
                  <th scope="col">Last seen</th>
                  <th scope="col">Started</th>
                </tr>
              </thead>
              <tbody>
                {snapshot.workers.map((w) => (
                  <tr key={w.id}>
                    <th scope="row" class="mono">
                      {shortId(w.id)}
                    </th>
                    <td>{w.role}</td>
                    <td class="mono">
                      {w.host}:{w.pid}
                    </td>
                    <td>
                      <span class={`badge ${w.alive ? 'tone-ok' : 'tone-bad'}`}>
                        <span class="glyph" aria-hidden="true">
                          {w.alive ? '✓' : '✕'}
                        </span>
                        {w.alive ? 'alive' : 'lost'}
                      </span>
                    </td>
                    <td>
                      <span class="meter-cell">
                        <Meter value={w.inFlight} max={w.concurrency} />
                        <span>
                          {formatCount(w.inFlight)} / {formatCount(w.concurrency)}
                        </span>
                      </span>
                    </td>
                    <td>{formatAgo(w.lastSeenAt, now)}</td>
                    <td>
                      <DateTime iso={w.startedAt} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : null}
      </section>
    </div>
  );
}
