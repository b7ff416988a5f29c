// An OpenTelemetry SDK for the benchmark's traced scenario: every span kept by a batch processor
// in an in-memory exporter, metrics read by a periodic reader into an in-memory exporter, the
// AsyncLocalStorage context manager and the W3C propagator: what an app's SDK setup registers,
// without a network exporter's cost.
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BatchSpanProcessor, InMemorySpanExporter, TracerProvider } from '@opentelemetry/sdk-trace';

export function registerBenchSdk() {
  const spans = new InMemorySpanExporter();
  const tracerProvider = new TracerProvider({ spanProcessors: [new BatchSpanProcessor({ exporter: spans, maxQueueSize: 8192, maxExportBatchSize: 1024, scheduledDelayMillis: 500 })] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(tracerProvider);
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const meterProvider = new MeterProvider({ readers: [new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 1000 })] });
  metrics.setGlobalMeterProvider(meterProvider);
  return {
    /** Spans exported so far (after a flush). */
    async spans(): Promise<number> {
      await tracerProvider.forceFlush();
      return spans.getFinishedSpans().length;
    },
    async close() {
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
}
