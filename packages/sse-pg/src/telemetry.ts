import { metrics, ValueType, type MeterProvider } from '@opentelemetry/api';

// The names match @fanout/core's (METRIC.sseClients, METRIC.notifyFailures, ATTR.stream).
const SSE_CLIENTS = 'fanout.sse.clients';
const NOTIFY_FAILURES = 'fanout.notify.failures';
const STREAM = 'fanout.stream';

/** What this process's live streams and broadcasts did: counted in memory, observed on collection. */
export const liveCounts = {
  /** Open SSE connections, by stream: one task's (`task`) or a tenant's (`tenant`). */
  clients: { task: 0, tenant: 0 },
  /** NOTIFYs that failed (their event was logged and dropped, or an ending will be announced again). */
  notifyFailures: 0,
};

const registered = new WeakSet<MeterProvider>();

/**
 * Reports SSE clients connected (`fanout.sse.clients`) and NOTIFY failures
 * (`fanout.notify.failures`) through the OpenTelemetry metrics API, on `meterProvider` (default
 * the global one). Once per provider; a process that registers an SDK calls it after.
 */
export function observeLiveMetrics(meterProvider: MeterProvider = metrics.getMeterProvider()): void {
  if (registered.has(meterProvider)) return;
  registered.add(meterProvider);
  const meter = meterProvider.getMeter('@fanout/sse-pg');
  const clients = meter.createObservableGauge(SSE_CLIENTS, { description: 'Live event streams (SSE) open on this process.', unit: '{connection}', valueType: ValueType.INT });
  const failures = meter.createObservableCounter(NOTIFY_FAILURES, { description: 'Task event broadcasts (NOTIFY) that failed.', unit: '{notification}', valueType: ValueType.INT });
  meter.addBatchObservableCallback(
    (result) => {
      result.observe(clients, liveCounts.clients.task, { [STREAM]: 'task' });
      result.observe(clients, liveCounts.clients.tenant, { [STREAM]: 'tenant' });
      result.observe(failures, liveCounts.notifyFailures);
    },
    [clients, failures],
  );
}
