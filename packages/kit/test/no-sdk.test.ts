import { createTestDatabase, waitFor } from '@fanout/testdb';
import { trace } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { consoleLogger } from '@fanout/core';
import { appMigrations, loadEnv, openApp, type AppRuntime } from '../src/index.ts';
import { TEST_ENV } from '../src/testing/index.ts';
import flaky from './fixtures/flaky-app.ts';

// Without an OpenTelemetry SDK (none is registered in this file) the runtime records nothing:
// no span, no trace context stored on jobs or tasks, no trace ids in log lines.
describe('telemetry without an SDK', () => {
  it('stores no trace context on jobs or tasks and writes no trace ids, and the task runs as usual', async () => {
    await using db = await createTestDatabase({ migrations: appMigrations(flaky) });
    const lines: Record<string, unknown>[] = [];
    const env = loadEnv({}, { ...Object.fromEntries(Object.entries(TEST_ENV).map(([k, v]) => [k, String(v)])), DATABASE_URL: db.url });
    const rt: AppRuntime<any, any, any> = await openApp(flaky, { env, role: 'local', databaseUrl: db.url, logger: consoleLogger('debug', {}, { write: (l) => void lines.push(JSON.parse(l)) }) });
    try {
      await rt.fanout.start({ role: 'local', maintenance: false });
      const task = await rt.fanout.submit(rt.fanout.definition('kit_flaky'), { count: 10, transient: ['n1'] }, { tenant: 'team-a' });
      await waitFor(async () => (await rt.fanout.getTask(task.id))?.status === 'completed', { message: 'the task' });
      expect(trace.getActiveSpan()).toBeUndefined();
      const { rows } = await rt.db.pool.query<{ name: string; data: Record<string, unknown>; trace_context: unknown }>(
        "SELECT name, data, trace_context FROM pgboss.job WHERE name LIKE 'kit_flaky%'",
      );
      expect(rows.some((r) => r.name === 'kit_flaky_manager')).toBe(true);
      expect(rows.some((r) => r.name === 'kit_flaky_items')).toBe(true); // the tenant's jobs, and one for the retry
      const [stored] = (await rt.db.pool.query<{ traced: number }>('SELECT count(*)::int AS traced FROM fanout_task WHERE trace IS NOT NULL')).rows;
      expect(stored!.traced).toBe(0);
      for (const row of rows) {
        expect(row.data.trace).toBeUndefined();
        expect(row.trace_context).toBeNull();
      }
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.filter((l) => 'traceId' in l)).toEqual([]);
      // The in-memory counts are kept all the same (the console's figures come from them).
      expect(rt.fanout.telemetry.counters()).toEqual({ errors: { http_503: { failed: 0, retried: 1 } }, leasesLost: 0 });
    } finally {
      await rt.close({ graceMs: 1000 });
    }
  });
});
