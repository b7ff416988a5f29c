import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { describeError } from '../../api/errors.ts';
import type { OpsSnapshot } from '../../api/types.ts';
import { useApp } from '../../app-context.ts';
import { ErrorNote } from '../../components/ErrorNote.tsx';
import { formatAgo, formatCount, formatDuration, formatTime } from '../../state/format.ts';
import { Attention } from './Attention.tsx';
import { OpsTables } from './OpsTables.tsx';
import { TimeChart } from './TimeChart.tsx';

const POLL_MS = 5000;

function throughputSummary(s: OpsSnapshot): string {
  const settled = s.series.reduce((sum, p) => sum + p.settled, 0);
  const failed = s.series.reduce((sum, p) => sum + p.failed, 0);
  const peak = Math.max(0, ...s.series.map((p) => p.settled));
  // The series holds every 10-second bucket of its window.
  return `Over the last ${s.series.length * 10 >= 60 ? `${Math.round((s.series.length * 10) / 60)} minutes` : `${s.series.length * 10} seconds`}: ${formatCount(settled)} items settled, ${formatCount(failed)} failed, at most ${formatCount(peak)} in 10 seconds.`;
}

function latencySummary(s: OpsSnapshot): string {
  const last = [...s.series].reverse().find((p) => p.p50Ms !== null || p.p95Ms !== null);
  if (!last) return 'No item finished in this window.';
  return `Latest bucket at ${formatTime(last.at)}: median ${formatDuration(last.p50Ms)}, 95th percentile ${formatDuration(last.p95Ms)}.`;
}

/** Operations: queues, workers, limits, throughput and latency, recoveries; asked again every 5 s while open. */
export function OpsView() {
  const { api } = useApp();
  const [snapshot, setSnapshot] = useState<OpsSnapshot | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [now, setNow] = useState(Date.now());
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const alive = useRef(true);
  // The newest poll owns the loop: one started by Retry while another is asked for takes over,
  // and the older one's answer neither shows nor schedules another poll.
  const latest = useRef(0);

  const poll = useCallback(async () => {
    if (timer.current) clearTimeout(timer.current);
    const mine = ++latest.current;
    try {
      const s = await api.get<OpsSnapshot>('/ops');
      if (!alive.current || mine !== latest.current) return;
      setSnapshot(s);
      setError(null);
    } catch (e) {
      if (!alive.current || mine !== latest.current) return;
      setError(describeError(e));
    }
    setNow(Date.now());
    timer.current = setTimeout(() => void poll(), POLL_MS);
  }, [api]);

  useEffect(() => {
    alive.current = true;
    void poll();
    return () => {
      alive.current = false;
      if (timer.current) clearTimeout(timer.current);
    };
  }, [poll]);

  const times = snapshot?.series.map((p) => p.at) ?? [];
  return (
    <div class="ops">
      <div class="section-head">
        <h1>Operations</h1>
        <p class="muted" role="status">
          {snapshot ? `Updated ${formatAgo(snapshot.at, now)} · every 5 s` : 'Loading…'}
        </p>
      </div>
      {error ? <ErrorNote message={`The operations figures could not be loaded: ${error}`} retry={() => void poll()} /> : null}
      {snapshot ? (
        <>
          <Attention snapshot={snapshot} />
          <div class="charts">
            <section class="panel" aria-labelledby="throughput-heading">
              <h2 id="throughput-heading">Throughput</h2>
              <TimeChart
                title="Items settled per 10 s"
                summary={throughputSummary(snapshot)}
                times={times}
                format={(v) => formatCount(Math.round(v))}
                series={[
                  { name: 'settled', values: snapshot.series.map((p) => p.settled), kind: 'area', className: 's-settled' },
                  { name: 'failed', values: snapshot.series.map((p) => p.failed), kind: 'line', className: 's-failed' },
                ]}
              />
            </section>
            <section class="panel" aria-labelledby="latency-heading">
              <h2 id="latency-heading">Latency</h2>
              <TimeChart
                title="Item duration, p50 and p95"
                summary={latencySummary(snapshot)}
                times={times}
                format={(v) => formatDuration(v)}
                series={[
                  { name: 'p50', values: snapshot.series.map((p) => p.p50Ms), kind: 'line', className: 's-p50' },
                  { name: 'p95', values: snapshot.series.map((p) => p.p95Ms), kind: 'line', className: 's-p95' },
                ]}
              />
            </section>
          </div>
          <OpsTables snapshot={snapshot} now={now} />
        </>
      ) : null}
    </div>
  );
}
