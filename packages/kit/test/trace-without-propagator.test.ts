import { SPAN } from '@fanout/core';
import { createTestDatabase, waitFor } from '@fanout/testdb';
import { context, propagation } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import { appMigrations, loadEnv, openApp, type AppRuntime } from '../src/index.ts';
import { TEST_ENV } from '../src/testing/index.ts';
import flaky from './fixtures/flaky-app.ts';

// An app that gives the runtime a tracer provider and registers no propagator (the API's default
// then writes nothing into a carrier): the trace still goes from the submit to every item, because
// Fanout writes and reads the W3C `traceparent` itself when no propagator does.
describe('tracing with a tracer provider and no propagator', () => {
  it('keeps the submit, the dispatch and every item in one trace', async () => {
    await using db = await createTestDatabase({ migrations: appMigrations(flaky) });
    const exporter = new InMemorySpanExporter();
    const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.disable();
    const env = loadEnv({}, { ...Object.fromEntries(Object.entries(TEST_ENV).map(([k, v]) => [k, String(v)])), DATABASE_URL: db.url });
    const rt: AppRuntime<any, any, any> = await openApp(flaky, { env, role: 'local', databaseUrl: db.url, tracerProvider });
    try {
      await rt.fanout.start({ role: 'local', maintenance: false });
      const task = await rt.fanout.submit(rt.fanout.definition('kit_flaky'), { count: 5, transient: ['n1'] }, { tenant: 'team-a' });
      await waitFor(async () => (await rt.fanout.getTask(task.id))?.status === 'completed', { message: 'the task' });
      const spans = await waitFor(() => {
        const all = exporter.getFinishedSpans();
        return all.filter((s) => s.name === SPAN.item).length === 6 ? all : null;
      }, { message: 'six item spans (one item twice)' });
      const submit = spans.find((s) => s.name === SPAN.submit)!;
      const traceId = submit.spanContext().traceId;
      const dispatch = spans.find((s) => s.name === SPAN.dispatch)!;
      expect(dispatch.spanContext().traceId).toBe(traceId);
      for (const item of spans.filter((s) => s.name === SPAN.item)) {
        expect(item.spanContext().traceId).toBe(traceId);
        expect(item.parentSpanContext?.spanId).toBe(dispatch.spanContext().spanId);
      }
      const [stored] = (await rt.db.pool.query<{ trace: Record<string, string> }>('SELECT trace FROM fanout_task WHERE id = $1', [task.id])).rows;
      expect(stored!.trace.traceparent).toBe(`00-${traceId}-${dispatch.spanContext().spanId}-01`);
    } finally {
      await rt.close({ graceMs: 1000 });
      await tracerProvider.shutdown();
      context.disable();
    }
  });
});
