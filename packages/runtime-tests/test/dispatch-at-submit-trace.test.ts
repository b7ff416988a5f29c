import { SPAN } from '@fanout/core';
import { migrationsDir } from '@fanout/prisma-adapter';
import { createTestDatabase } from '@fanout/testdb';
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import { createAppRuntime } from './fixtures/app-runtime.ts';
import { testDefinition } from './fixtures/definitions.ts';
import { waitFor } from './fixtures/harness.ts';

// A task dispatched at submit (`options.manager.dispatchAtSubmit`) has no manager job: its page and
// its items are children of the submit's span, in the caller's trace.
describe('the trace of a task dispatched at submit', () => {
  it('holds the submit, its one page and every item', async () => {
    await using db = await createTestDatabase({ migrations: [migrationsDir] });
    const exporter = new InMemorySpanExporter();
    const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(tracerProvider);
    const app = createAppRuntime({ databaseUrl: db.url, definitions: [testDefinition({ dispatchAtSubmit: 50 })], worker: { concurrency: 10 }, maintenance: { intervalMs: 3_600_000 } });
    try {
      await app.fanout.start();
      const caller = tracerProvider.getTracer('test').startSpan('caller');
      const task = await context.with(trace.setSpan(context.active(), caller), () => app.fanout.submit('test_batch', { count: 12 }, { tenant: 'a' }));
      caller.end();
      expect(task).toMatchObject({ status: 'running', total: 12 });
      await waitFor(async () => (await app.fanout.getTask(task.id))?.status === 'completed', { message: 'the task completed' });
      const traceId = caller.spanContext().traceId;
      const spans = await waitFor(() => {
        const found = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
        return found.filter((s) => s.name === SPAN.item).length === 12 ? found : null;
      }, { message: 'twelve item spans in the caller’s trace' });
      const submit = spans.find((s) => s.name === SPAN.submit)!;
      expect(submit.parentSpanContext?.spanId).toBe(caller.spanContext().spanId);
      const pages = spans.filter((s) => s.name === SPAN.page);
      expect(pages).toHaveLength(1);
      expect(pages[0]!.parentSpanContext?.spanId).toBe(submit.spanContext().spanId);
      expect(spans.some((s) => s.name === SPAN.dispatch)).toBe(false);
      for (const item of spans.filter((s) => s.name === SPAN.item)) expect(item.parentSpanContext?.spanId).toBe(submit.spanContext().spanId);
    } finally {
      await app.close();
      await tracerProvider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    }
  });
});
