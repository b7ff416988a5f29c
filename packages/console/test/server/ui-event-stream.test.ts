// The page's event stream client, run in Node against a real HTTP server on loopback.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { ConsoleEvent } from '../../src/ui/api/types.ts';
import { retryAfterMs } from '../../src/ui/stream/backoff.ts';
import { EventStream, type StreamStatus } from '../../src/ui/stream/event-stream.ts';

describe('retryAfterMs', () => {
  const now = Date.parse('2026-12-03T12:00:00Z');
  it('reads seconds and HTTP dates, at most 5 minutes, and nothing else', () => {
    expect(retryAfterMs('10', now)).toBe(10_000);
    expect(retryAfterMs(' 3 ', now)).toBe(3_000);
    expect(retryAfterMs('Thu, 03 Dec 2026 12:00:30 GMT', now)).toBe(30_000);
    expect(retryAfterMs('86400', now)).toBe(300_000);
    expect(retryAfterMs('Thu, 03 Dec 2026 11:59:00 GMT', now)).toBe(0);
    for (const bad of [null, '', '-5', '1.5', 'soon']) expect(retryAfterMs(bad, now)).toBe(0);
  });
});

describe('EventStream against a real server', () => {
  let server: Server | undefined;
  let stream: EventStream | undefined;
  afterEach(async () => {
    stream?.close();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    server = stream = undefined;
  });

  it('waits out the Retry-After of a refusal, says the server’s reason, and connects when asked again', async () => {
    let requests = 0;
    server = createServer((req, res) => {
      requests++;
      if (requests === 1) {
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '30' });
        res.end(JSON.stringify({ error: { code: 'too_many_streams', message: 'this tenant has 2 live streams open on this server' } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('id: 1\nevent: task.progress\ndata: {"taskId":"t1"}\n\n');
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const statuses: StreamStatus[] = [];
    const events: ConsoleEvent[] = [];
    let changed: () => void = () => {};
    const until = async (test: () => boolean, what: string) => {
      const deadline = Date.now() + 10_000;
      while (!test()) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise<void>((resolve) => {
          changed = resolve;
          setTimeout(resolve, 100);
        });
      }
    };
    stream = new EventStream({
      url: () => `${base}/events`,
      headers: () => ({ authorization: 'Bearer test' }),
      onEvent: (event) => {
        events.push(event);
        changed();
      },
      onStatus: (status) => {
        statuses.push(status);
        changed();
      },
      onUnauthorized: () => {},
    });
    const opened = Date.now();
    stream.open(null);
    await until(() => statuses.some((s) => s.state === 'waiting'), 'the refusal');
    const waiting = statuses.find((s) => s.state === 'waiting') as Extract<StreamStatus, { state: 'waiting' }>;
    // The first reconnect would come after 1 s; the server asked for 30.
    expect(waiting.retryAt - opened).toBeGreaterThanOrEqual(29_000);
    expect(waiting.reason).toContain('HTTP 429');
    expect(waiting.reason).toContain('this tenant has 2 live streams open');
    expect(requests).toBe(1);
    // The operator's "reconnect now" skips the wait.
    stream.reconnectNow();
    await until(() => events.length === 1, 'the event after reconnecting');
    expect(statuses.at(-1)).toEqual({ state: 'live' });
    expect(events[0]).toMatchObject({ type: 'task.progress', taskId: 't1' });
  });
});
