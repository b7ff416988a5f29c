import type { OpsSnapshot } from '../../api/types.ts';
import { useApp } from '../../app-context.ts';
import { DateTime } from '../../components/DateTime.tsx';
import { formatCount, formatDuration, shortId } from '../../state/format.ts';

/**
 * What an on-call engineer looks at first: tasks past their deadline or making no progress (the
 * figures the alert rules read), failures and retries by error type, lost leases and the live
 * streams.
 */
export function Attention({ snapshot }: { snapshot: OpsSnapshot }) {
  const { me } = useApp();
  const a = snapshot.attention;
  const errors = snapshot.errors ?? [];
  return (
    <div class="ops-grid">
      <section class="panel" aria-labelledby="attention-heading">
        <h2 id="attention-heading">Needs attention</h2>
        {a ? (
          <>
            <p class="hint">
              {formatCount(a.active.running)} running · {formatCount(a.active.queued)} queued · {formatCount(a.active.stopping)} stopping
            </p>
            {a.overdue.length === 0 && a.stalled.length === 0 ? <p class="empty">No task is past its deadline or stalled.</p> : null}
            {a.overdue.length > 0 || a.stalled.length > 0 ? (
              <ul class="attention">
                {a.overdue.map((t) => (
                  <li key={`o-${t.id}`}>
                    <span class="badge tone-bad">past deadline</span> <TaskRef id={t.id} tenant={t.tenant} viewer={me.tenant} /> {t.kind}
                    {t.tenant ? ` · ${t.tenant}` : ''} · due <DateTime iso={t.deadlineAt} />
                  </li>
                ))}
                {a.stalled.map((t) => (
                  <li key={`s-${t.id}`}>
                    <span class="badge tone-warn">no progress</span> <TaskRef id={t.id} tenant={t.tenant} viewer={me.tenant} /> {t.kind}
                    {t.tenant ? ` · ${t.tenant}` : ''} · {formatCount(t.settled)} of {formatCount(t.total)} settled, none for {formatDuration(t.quietMs)}
                  </li>
                ))}
              </ul>
            ) : null}
          </>
        ) : (
          <p class="empty">Task gauges are off for this app.</p>
        )}
        <dl class="facts recoveries" aria-label="Leases and live streams">
          <div>
            <dt>Leases lost by live workers</dt>
            <dd class={snapshot.leasesLost > 0 ? 'c-warn' : undefined}>{formatCount(snapshot.leasesLost ?? 0)}</dd>
          </div>
          <div>
            <dt>Live streams open</dt>
            <dd>{formatCount(snapshot.live?.sseClients ?? 0)}</dd>
          </div>
          <div>
            <dt>Broadcasts failed</dt>
            <dd class={(snapshot.live?.notifyFailures ?? 0) > 0 ? 'c-warn' : undefined}>{formatCount(snapshot.live?.notifyFailures ?? 0)}</dd>
          </div>
        </dl>
      </section>

      <section class="panel" aria-labelledby="errors-heading">
        <h2 id="errors-heading">Errors</h2>
        {errors.length === 0 ? <p class="empty">No item failed or was retried since the processes started.</p> : null}
        {errors.length > 0 ? (
          <div class="table-scroll" role="region" aria-label="Errors by type, table" tabIndex={0}>
            <table>
              <thead>
                <tr>
                  <th scope="col">Error type</th>
                  <th scope="col" class="num">Failed</th>
                  <th scope="col" class="num">Retried</th>
                </tr>
              </thead>
              <tbody>
                {errors.map((e) => (
                  <tr key={e.code}>
                    <th scope="row" class="mono">
                      {e.code}
                    </th>
                    <td class={`num${e.failed > 0 ? ' c-bad' : ''}`}>{formatCount(e.failed)}</td>
                    <td class="num">{formatCount(e.retried)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : null}
        <p class="hint">Since the processes listed below started; the same counts as the fanout_items_settled and fanout_items_retried metrics.</p>
      </section>
    </div>
  );
}

/**
 * A task of the list: a link to its page when the viewer's tenant owns it; otherwise its whole id
 * as text, to be copied (an operator sees every tenant's tasks here, but a task's page, its items
 * and its stream stay its own tenant's, and a link would open a "not found").
 */
function TaskRef({ id, tenant, viewer }: { id: string; tenant: string | null; viewer: string }) {
  if (tenant === viewer) {
    return (
      <a href={`#/tasks/${encodeURIComponent(id)}`} class="mono">
        {shortId(id)}
      </a>
    );
  }
  return <span class="mono">{id}</span>;
}
