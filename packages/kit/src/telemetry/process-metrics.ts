import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { metrics } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { observeLiveMetrics } from '@fanout/sse-pg';

export interface MetricsEndpoint {
  /** The meter provider the process's runtimes, pg-boss and live streams report to. */
  meterProvider: MeterProvider;
  port: number;
  /** `http://host:port/metrics` */
  url: string;
  /** Stops serving and shuts the meter provider down. */
  close(): Promise<void>;
}

/**
 * The process's metrics for Prometheus, on a port of their own (`FANOUT_METRICS_PORT`): every
 * process serves them, worker processes included (they serve nothing else), and the scrape stays
 * off the port users reach, so it needs no token (keep the port inside the cluster network). The
 * provider is also registered as the global one when the app has not registered its own, so
 * metrics of the app's code and of other libraries appear there too.
 */
export async function serveMetrics(options: { port: number; host: string; service: string }): Promise<MetricsEndpoint> {
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const meterProvider = new MeterProvider({ resource: resourceFromAttributes({ 'service.name': options.service }), readers: [exporter] });
  metrics.setGlobalMeterProvider(meterProvider);
  observeLiveMetrics(meterProvider);
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
      response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'not_found', message: 'metrics are at GET /metrics' } }));
      return;
    }
    exporter.getMetricsRequestHandler(request, response);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host === '0.0.0.0' ? '127.0.0.1' : options.host;
  let closing: Promise<void> | null = null;
  return {
    meterProvider,
    port,
    url: `http://${host}:${port}/metrics`,
    close: () =>
      (closing ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        await meterProvider.shutdown().catch(() => {});
      })()),
  };
}
