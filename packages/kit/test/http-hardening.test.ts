import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiPrefix } from '../src/index.ts';
import { appTest, TEST_TOKEN, type AppTestOf } from '../src/testing/index.ts';
import echo from './fixtures/echo-app.ts';

// An app's API process as clients that are careless or hostile meet it: a real OS process over
// loopback, configured from the environment like production.
let t: AppTestOf<typeof echo>;
let api: Awaited<ReturnType<AppTestOf<typeof echo>['api']>>;

beforeAll(async () => {
  t = await appTest(echo);
  api = await t.api({ FANOUT_BODY_LIMIT_BYTES: 65_536, FANOUT_AUTH_FAILURES_PER_MINUTE: 4 });
});
afterAll(async () => {
  await t?.[Symbol.asyncDispose]();
});

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

/** A body of `bytes` made as it is sent (chunked: no Content-Length), never whole in this process. */
function streamedBody(bytes: number): ReadableStream<Uint8Array> {
  const chunk = new Uint8Array(1024 * 1024).fill(0x20);
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent >= bytes) return controller.close();
      sent += chunk.byteLength;
      controller.enqueue(chunk);
    },
  });
}

describe('an API process under hostile requests', () => {
  it('answers 413 to bodies over FANOUT_BODY_LIMIT_BYTES without buffering them: four 100 MB requests leave its memory as it was', async () => {
    const before = rssMb(api.pid);
    const answers = await Promise.all(
      Array.from({ length: 4 }, () =>
        fetch(`${api.url}${apiPrefix('echo')}/tasks`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TEST_TOKEN.a}`, 'content-type': 'application/json' },
          body: streamedBody(100 * 1024 * 1024),
          duplex: 'half',
        } as RequestInit).then(async (res) => ({ status: res.status, body: (await res.json()) as { error: { code: string } } })),
      ),
    );
    for (const answer of answers) expect(answer).toEqual({ status: 413, body: { error: expect.objectContaining({ code: 'payload_too_large' }) } });
    expect(rssMb(api.pid) - before).toBeLessThan(100);
  });

  it('answers 413, not 500, to a 600 MiB body at once, from its Content-Length', async () => {
    const started = Date.now();
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${api.url}${apiPrefix('echo')}/tasks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TEST_TOKEN.a}`, 'content-type': 'application/json', 'content-length': String(600 * 1024 * 1024) },
      });
      req.on('response', (res) => {
        resolve(res.statusCode!);
        res.resume();
        req.destroy();
      });
      req.on('error', reject);
      req.write('{"input":');
    });
    expect(status).toBe(413);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('answers JSON with the security headers and a request id everywhere: unknown paths under the API and outside it, the console keeps its own policy', async () => {
    for (const path of [`${apiPrefix('echo')}/no-such-route`, '/no-such-page', `${apiPrefix('other')}/tasks`]) {
      const res = await fetch(`${api.url}${path}`, { headers: { authorization: `Bearer ${TEST_TOKEN.a}` } });
      expect(res.status, path).toBe(404);
      expect(res.headers.get('content-type'), path).toContain('application/json');
      expect(await res.json()).toEqual({ error: { code: 'no_route', message: expect.stringContaining(path) } });
      expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
    const page = await fetch(`${api.url}/`);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(page.headers.get('cache-control')).toBe('no-cache');
    const data = await t.call('GET', '/tasks');
    expect(data.headers.get('cache-control')).toBe('no-store');
    expect(data.headers.get('referrer-policy')).toBe('no-referrer');
    const health = await fetch(`${api.url}/healthz`, { headers: { 'x-request-id': 'probe-1' } });
    expect(health.headers.get('x-request-id')).toBe('probe-1');
    // A path served, with a method it does not take: 405, the methods it takes, the same headers.
    const put = await t.call('PUT', '/tasks');
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('POST, GET, HEAD');
    expect(await put.json()).toEqual({ error: { code: 'method_not_allowed', message: expect.stringContaining('this path takes POST, GET, HEAD') } });
    expect(put.headers.get('x-content-type-options')).toBe('nosniff');
    expect(put.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers a NUL character anywhere in a request with 400 naming the field, before an app route stores it', async () => {
    const inPath = await t.call('POST', '/marks/a%00b', { body: { text: 'fine' } });
    expect(inPath.status).toBe(400);
    expect(((await inPath.json()) as { error: { issues: unknown[] } }).error.issues).toEqual([{ field: 'params.subject', rule: 'nul_character', message: 'must not contain the NUL character (U+0000)' }]);
    const inBody = await t.call('POST', '/marks/fine', { body: { text: 'a\u0000b' } });
    expect(inBody.status).toBe(400);
    expect(((await inBody.json()) as { error: { issues: { field: string }[] } }).error.issues[0]!.field).toBe('body.text');
    expect((await t.call('GET', '/marks?subject=%00')).status).toBe(400);
    // Half a character, as a JSON "\ud800" escape gives it: jsonb refuses it too.
    const half = await t.call('POST', '/marks/fine', { body: { text: 'a\ud800b' } });
    expect(half.status).toBe(400);
    expect(((await half.json()) as { error: { issues: unknown[] } }).error.issues).toEqual([{ field: 'body.text', rule: 'lone_surrogate', message: expect.stringContaining('well-formed Unicode') }]);
    // However deep it is (the walk stops at 64 levels; below, the rest is looked at whole).
    let deep: unknown = 'x\ud800';
    for (let i = 0; i < 70; i++) deep = { a: deep };
    const deeper = await t.call('POST', '/marks/fine', { body: { text: 'ok', deep } });
    expect(deeper.status).toBe(400);
    expect(((await deeper.json()) as { error: { issues: { field: string; rule: string }[] } }).error.issues[0]).toMatchObject({ field: `body.deep${'.a'.repeat(64)}`, rule: 'lone_surrogate' });
    const task = await t.call('POST', '/tasks', { body: { input: { text: '\udc00' } } });
    expect(task.status).toBe(400);
    expect(((await task.json()) as { error: { issues: { field: string; rule: string }[] } }).error.issues[0]).toMatchObject({ field: 'body.input.text', rule: 'lone_surrogate' });
  });

  it('refuses a client after FANOUT_AUTH_FAILURES_PER_MINUTE wrong tokens with 429 and Retry-After', async () => {
    for (let i = 0; i < 4; i++) expect((await t.call('GET', '/tasks', { token: `wrong-token-guess-${i}` })).status).toBe(401);
    const refused = await t.call('GET', '/tasks');
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('too_many_requests');
  });
});
