import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { waitFor } from '@fanout/testdb';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { appTest, metricsUrl, scrape, TEST_TOKEN, total, type Sample } from '../src/testing/index.ts';
import flaky, { FLAKY_SECRET } from './fixtures/flaky-app.ts';

const alertsFile = new URL('../../../docs/alerts.yml', import.meta.url);
// Prometheus's own checker, where installed (Debian: apt-get install prometheus).
const promtool = spawnSync('promtool', ['--version']).status === 0;

describe("an app's processes serve their metrics for Prometheus", () => {
  it('/metrics of the API and worker processes, scraped before and after a task, show its deltas; no credential reaches their logs', async () => {
    await using t = await appTest(flaky, { env: { FANOUT_METRICS_PORT: 0, FANOUT_LOG_LEVEL: 'debug' } });
    const api = await t.api();
    const [worker] = await t.workers(1);
    const urls = { api: metricsUrl(api), worker: metricsUrl(worker!) };
    expect(new URL(urls.api).port).not.toBe(new URL(api.url).port); // a port of its own
    const before = { api: await scrape(urls.api), worker: await scrape(urls.worker) };

    const res = await t.call('POST', '/tasks', { body: { input: { count: 20, transient: ['n3'], permanent: ['n5'], limited: ['n7'] } } });
    expect(res.status).toBe(202);
    const { id } = (await res.json()) as { id: string };
    const task = await waitFor(async () => {
      const x = (await (await t.call('GET', `/tasks/${id}`)).json()) as { status: string; succeeded: number; failed: number };
      return x.status === 'completed' ? x : null;
    }, { message: 'the task' });
    expect(task).toMatchObject({ succeeded: 19, failed: 1 });

    const def = { fanout_definition: 'kit_flaky', fanout_tenant: 'team-a' };
    const after = { api: await scrape(urls.api), worker: await waitFor(async () => {
      const now = await scrape(urls.worker);
      return total(now, 'fanout_tasks_finished_total', def) - total(before.worker, 'fanout_tasks_finished_total', def) === 1 ? now : null;
    }, { message: 'the ending counted' }) };
    const delta = (where: 'api' | 'worker', name: string, labels: Record<string, string> = {}) => total(after[where], name, labels) - total(before[where], name, labels);
    expect(delta('api', 'fanout_tasks_submitted_total', def)).toBe(1);
    expect(delta('worker', 'fanout_items_settled_total', { ...def, fanout_outcome: 'succeeded' })).toBe(task.succeeded);
    expect(delta('worker', 'fanout_items_settled_total', { ...def, fanout_outcome: 'failed', error_type: 'malformed' })).toBe(task.failed);
    expect(delta('worker', 'fanout_items_retried_total', { ...def, error_type: 'http_503' })).toBe(1);
    expect(delta('worker', 'fanout_tasks_finished_total', { ...def, fanout_task_status: 'completed' })).toBe(1);
    expect(delta('worker', 'fanout_item_duration_count', { fanout_definition: 'kit_flaky' })).toBe(20);
    expect(delta('worker', 'fanout_item_queue_wait_count', { fanout_definition: 'kit_flaky' })).toBe(21);
    // pg-boss's own metrics, and the task gauges read from the database, in the same scrape.
    // (The manager's job, and the jobs of the child queue that took the items: a few, not one per item.)
    expect(delta('worker', 'messaging_client_consumed_messages_total')).toBeGreaterThanOrEqual(2);
    expect(total(after.api, 'fanout_tasks_active', { fanout_definition: 'kit_flaky', fanout_task_status: 'running' })).toBe(0);
    // A live stream open on the API process is counted while it is open.
    const stream = new AbortController();
    const events = await fetch(`${api.url}/api/flaky/events`, { headers: { authorization: `Bearer ${TEST_TOKEN.a}` }, signal: stream.signal });
    expect(events.status).toBe(200);
    await waitFor(async () => total(await scrape(urls.api), 'fanout_sse_clients', { fanout_stream: 'tenant' }) === 1, { message: 'the open stream counted' });
    stream.abort();
    await events.body?.cancel().catch(() => {});
    await waitFor(async () => total(await scrape(urls.api), 'fanout_sse_clients', { fanout_stream: 'tenant' }) === 0, { message: 'the closed stream no longer counted' });
    // Nothing but GET /metrics there.
    expect((await fetch(urls.api.replace('/metrics', '/other'))).status).toBe(404);

    for (const pod of [api, worker!]) {
      expect(pod.stderr()).not.toContain(FLAKY_SECRET);
      expect(pod.stderr()).not.toContain(TEST_TOKEN.a);
    }
    // The worker logged the item lines at debug level, masked.
    expect(worker!.stderr()).toContain('"apiKey":"[redacted]"');

    // Every series the documented alert rules read is served (their movement is tested with the
    // same instruments in telemetry.test.ts).
    const served = new Set([...after.api, ...after.worker].map((sample: Sample) => sample.name));
    for (const rule of alertRules()) {
      expect(rule.metrics.length, rule.alert).toBeGreaterThan(0);
      for (const name of rule.metrics) expect(served, `${rule.alert} reads ${name}`).toContain(name);
    }
  });
});

/** The documented alert rules and the metric names each expression reads. */
function alertRules(): { alert: string; expr: string; metrics: string[] }[] {
  const doc = parse(readFileSync(alertsFile, 'utf8')) as { groups: { rules: { alert: string; expr: string }[] }[] };
  // Label names appear in `by (…)` and in `{…}` matchers: what is left are the series read.
  const series = (expr: string) => expr.replace(/\b(by|on|without|ignoring)\s*\([^)]*\)/g, '').replace(/\{[^}]*\}/g, '');
  return doc.groups.flatMap((g) => g.rules).map((r) => ({ ...r, metrics: [...new Set(series(r.expr).match(/\bfanout_[a-z_]+/g) ?? [])] }));
}

describe('the documented alert rules', () => {
  it('cover a task past its deadline, failing items, lapsing leases and a task making no progress, each with a summary', () => {
    const rules = alertRules();
    expect(rules.map((r) => r.alert)).toEqual(expect.arrayContaining(['FanoutTaskPastDeadline', 'FanoutItemsFailing', 'FanoutLeasesLapsing', 'FanoutTaskStalled']));
    const byName = Object.fromEntries(rules.map((r) => [r.alert, r.metrics]));
    expect(byName.FanoutTaskPastDeadline).toEqual(['fanout_tasks_overdue']);
    expect(byName.FanoutItemsFailing).toEqual(['fanout_items_settled_total']);
    expect(byName.FanoutLeasesLapsing).toEqual(['fanout_maintenance_recoveries_total']);
    expect(byName.FanoutTaskStalled).toEqual(['fanout_tasks_stalled']);
  });

  it.skipIf(!promtool)('load in Prometheus, and fire (and stay quiet) on the series their unit tests give (promtool)', () => {
    const cwd = fileURLToPath(new URL('.', alertsFile));
    for (const args of [['check', 'rules', 'alerts.yml'], ['test', 'rules', 'alerts.test.yml']]) {
      const run = spawnSync('promtool', args, { cwd, encoding: 'utf8' });
      expect(run.status, `promtool ${args.join(' ')}: ${run.stdout}${run.stderr}`).toBe(0);
    }
  });
});
