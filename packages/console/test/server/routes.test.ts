import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleRoutes, type ConsoleConfig } from '../../src/index.ts';
import { defaultUiDir, loadUiBuild } from '../../src/server/assets.ts';
import { CONTENT_SECURITY_POLICY } from '../../src/server/shell.ts';

// The routes on a real HTTP server on loopback, serving the package's real UI build (the
// suite builds every package before it runs).
const config: ConsoleConfig = {
  title: 'ASL </script><script>alert(1)</script> & co',
  apiBase: '/api/asl/',
  newTask: { title: 'New batch', submitLabel: 'Start batch', fields: [{ kind: 'text', name: 'note', label: 'Note' }] },
  exports: [{ label: 'CSV', path: '/tasks/{id}/results.csv' }],
};

let server: ServerType;
let base: string;

beforeAll(async () => {
  const app = new Hono();
  app.route('/', consoleRoutes(config));
  server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const get = (path: string, headers: Record<string, string> = {}) => fetch(base + path, { headers });

function configOf(html: string): unknown {
  const match = /<script type="application\/json" id="fanout-console-config">([^<]*)<\/script>/.exec(html);
  if (!match) throw new Error('no config element');
  return JSON.parse(match[1]!);
}

describe('the HTML shell at /', () => {
  it('is served with a strict CSP, never cached unchecked, and embeds the resolved config', async () => {
    const res = await get('/', { 'accept-encoding': 'identity' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toBe(CONTENT_SECURITY_POLICY);
    expect(CONTENT_SECURITY_POLICY).toBe("default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'");
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const html = await res.text();
    expect(configOf(html)).toEqual({
      title: config.title,
      apiBase: '/api/asl',
      assetsBase: '/console/',
      newTask: { ...config.newTask, options: false },
      columns: [],
      exports: config.exports,
      detailPanels: [],
      taskActions: [],
      pages: [],
    });
    // Nothing inline runs: the only scripts are the bundle and the JSON data block.
    expect(html.match(/<script[^>]*>/g)).toEqual([expect.stringMatching(/^<script type="module" src="\/console\/console-[A-Z0-9]+\.js">$/), '<script type="application/json" id="fanout-console-config">']);
  });

  it('cannot be broken out of by a title holding </script>', async () => {
    const html = await (await get('/')).text();
    expect(html).not.toContain('</script><script>alert(1)');
    expect(html).toContain('<title>ASL &lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt; &amp; co</title>');
    expect(html).toContain('\\u003c/script\\u003e');
  });

  it('is compressed when the request accepts it, and answers 304 to its ETag', async () => {
    const br = await fetch(base + '/', { headers: { 'accept-encoding': 'br' } });
    expect(br.headers.get('content-encoding')).toBe('br');
    expect(br.headers.get('vary')).toBe('Accept-Encoding');
    const etag = br.headers.get('etag')!;
    expect(etag).toMatch(/^"[\w-]+"$/);
    const again = await get('/', { 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(again.headers.get('content-security-policy')).toBe(CONTENT_SECURITY_POLICY);
  });
});

describe('the UI files under assetsBase', () => {
  const manifest = loadUiBuild(defaultUiDir()).manifest;

  it('serves the hashed bundle with its type, pre-compressed and cached for good', async () => {
    const plain = await get(`/console/${manifest.js}`, { 'accept-encoding': 'identity' });
    expect(plain.status).toBe(200);
    expect(plain.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(plain.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(plain.headers.get('content-encoding')).toBeNull();
    const body = Buffer.from(await plain.arrayBuffer());

    // fetch would decode on its own; node:http's raw bytes show what went over the wire.
    const raw = async (encoding: string) => {
      const { request } = await import('node:http');
      return new Promise<{ encoding: string | undefined; bytes: Buffer }>((resolve, reject) => {
        request(`${base}/console/${manifest.js}`, { headers: { 'accept-encoding': encoding } }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ encoding: res.headers['content-encoding'], bytes: Buffer.concat(chunks) }));
        })
          .on('error', reject)
          .end();
      });
    };
    const br = await raw('gzip, deflate, br');
    expect(br.encoding).toBe('br');
    expect(brotliDecompressSync(br.bytes).equals(body)).toBe(true);
    expect(br.bytes.length).toBeLessThan(body.length / 2);
    const gz = await raw('gzip;q=1, br;q=0');
    expect(gz.encoding).toBe('gzip');
    expect(gunzipSync(gz.bytes).equals(body)).toBe(true);
  });

  it('serves the stylesheet and the icon', async () => {
    expect((await get(`/console/${manifest.css}`)).headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect((await get(`/console/${manifest.icon}`)).headers.get('content-type')).toBe('image/svg+xml');
  });

  it('answers 404 with a JSON error for a file it does not have', async () => {
    const res = await get('/console/nope.js');
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: { code: 'not_found', message: 'No console file "nope.js".' } });
    expect((await get('/console/manifest.json')).status).toBe(404);
  });
});

describe('a missing build', () => {
  it('gives one clear error', () => {
    const dir = mkdtempSync(join(tmpdir(), 'console-ui-'));
    try {
      expect(() => loadUiBuild(dir)).toThrow(/^@fanout\/console: the UI is not built; run pnpm build/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
