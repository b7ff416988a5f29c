import { createHash } from 'node:crypto';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { Hono } from 'hono';
import type { ConsoleConfig } from '../config.ts';
import { defaultUiDir, loadUiBuild, type Asset } from './assets.ts';
import { chooseEncoding, type Encoding } from './encoding.ts';
import { resolveConfig } from './resolve-config.ts';
import { CONTENT_SECURITY_POLICY, renderShell } from './shell.ts';

const ENCODINGS: readonly Encoding[] = ['br', 'gzip'];

function respond(asset: Asset, acceptEncoding: string | undefined, headers: Record<string, string>): Response {
  const encoding = chooseEncoding(acceptEncoding, ENCODINGS.filter((e) => asset.encoded[e]));
  const body = encoding ? asset.encoded[encoding]! : asset.body;
  const h = new Headers({ 'content-type': asset.type, 'content-length': String(body.byteLength), vary: 'Accept-Encoding', 'x-content-type-options': 'nosniff', ...headers });
  if (encoding) h.set('content-encoding', encoding);
  return new Response(body as Uint8Array<ArrayBuffer>, { status: 200, headers: h });
}

/**
 * The console's routes: the HTML shell at `/` (the configuration embedded, a strict
 * Content-Security-Policy, never cached without revalidation) and the UI's files under
 * `config.assetsBase` (pre-compressed brotli or gzip when the request accepts it, cached for
 * good since their names carry their content's hash). Mount it at the app's root:
 * `app.route('/', consoleRoutes(config))`. Reads the UI build once, here; throws when the
 * configuration is invalid (naming the field) or the UI is not built.
 */
export function consoleRoutes(config: ConsoleConfig): Hono {
  const resolved = resolveConfig(config);
  const build = loadUiBuild(defaultUiDir());
  const html = new TextEncoder().encode(renderShell(resolved, build.manifest));
  const shell: Asset = {
    body: html,
    type: 'text/html; charset=utf-8',
    encoded: {
      br: brotliCompressSync(html, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }),
      gzip: gzipSync(html, { level: 9 }),
    },
    immutable: false,
  };
  const etag = `"${createHash('sha256').update(html).digest('base64url').slice(0, 27)}"`;

  const app = new Hono();
  app.get('/', (c) => {
    const headers = {
      'cache-control': 'no-cache',
      etag,
      'content-security-policy': CONTENT_SECURITY_POLICY,
      'referrer-policy': 'no-referrer',
      'x-frame-options': 'DENY',
    };
    const match = c.req.header('if-none-match');
    if (match && match.split(',').some((t) => t.trim() === etag)) return new Response(null, { status: 304, headers: { ...headers, vary: 'Accept-Encoding' } });
    return respond(shell, c.req.header('accept-encoding'), headers);
  });
  app.get(`${resolved.assetsBase}:name`, (c) => {
    const name = c.req.param('name') ?? '';
    const asset = build.files.get(name);
    if (!asset) return c.json({ error: { code: 'not_found', message: `No console file ${JSON.stringify(name)}.` } }, 404);
    return respond(asset, c.req.header('accept-encoding'), {
      'cache-control': asset.immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
    });
  });
  return app;
}
