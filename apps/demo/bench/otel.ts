// An OpenTelemetry SDK for the benchmark's traced scenario: every span kept (the default sampler,
// parent-based always-on: nothing is sampled away) by a batch processor in an in-memory exporter, metrics read by a periodic reader into an in-memory exporter, the
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
    /**
     * Spans exported so far (after a flush): how many, how many by name, and how many `fanout.item`
     * spans are in the trace `traceId` (the caller's trace the task was submitted in).
     */
    async spans(traceId?: string): Promise<{ spans: number; spansByName: Record<string, number>; itemSpansInTrace: number }> {
      await tracerProvider.forceFlush();
      const finished = spans.getFinishedSpans();
      const spansByName: Record<string, number> = {};
      let itemSpansInTrace = 0;
      for (const span of finished) {
        spansByName[span.name] = (spansByName[span.name] ?? 0) + 1;
        if (span.name === 'fanout.item' && span.spanContext().traceId === traceId) itemSpansInTrace++;
      }
      return { spans: finished.length, spansByName, itemSpansInTrace };
    },
    async close() {
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
}
