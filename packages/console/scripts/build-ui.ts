// Builds the browser bundle into dist/ui/: content-hashed, minified JS and CSS, the icon,
// pre-compressed .br and .gz siblings, and manifest.json naming the files for the server. Prints
// the first screen's weight over the wire and fails when it passes the budget.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { resolveConfig } from '../src/server/resolve-config.ts';
import { renderShell, type UiManifest } from '../src/server/shell.ts';

const BUDGET = 100_000; // bytes over the wire for the first screen (HTML + JS + CSS + icon)
const root = fileURLToPath(new URL('..', import.meta.url));
const out = join(root, 'dist', 'ui');

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

const result = await build({
  absWorkingDir: root,
  entryPoints: [
    { in: 'src/ui/main.tsx', out: 'console' },
    { in: 'src/ui/styles.css', out: 'console' },
  ],
  outdir: out,
  entryNames: '[name]-[hash]',
  bundle: true,
  minify: true,
  format: 'esm',
  platform: 'browser',
  // Browsers from 2023 on: fetch streams, <dialog>, Intl's shortOffset time zone names.
  target: ['chrome111', 'edge111', 'firefox114', 'safari16.4'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  sourcemap: 'linked',
  legalComments: 'eof',
  metafile: true,
  logLevel: 'warning',
});

const outputs = Object.keys(result.metafile.outputs).map((p) => basename(p));
const pick = (ext: string) => {
  const name = outputs.find((n) => n.endsWith(ext));
  if (!name) throw new Error(`build-ui: esbuild wrote no ${ext} file`);
  return name;
};

const iconSource = readFileSync(join(root, 'src', 'ui', 'icon.svg'));
const icon = `icon-${createHash('sha256').update(iconSource).digest('hex').slice(0, 8).toUpperCase()}.svg`;
writeFileSync(join(out, icon), iconSource);

const manifest: UiManifest = { js: pick('.js'), css: pick('.css'), icon };
writeFileSync(join(out, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);

const sizes = new Map<string, { raw: number; br: number; gz: number }>();
for (const name of [...outputs, icon]) {
  const body = readFileSync(join(out, name));
  const br = brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: body.byteLength } });
  const gz = gzipSync(body, { level: 9 });
  writeFileSync(join(out, `${name}.br`), br);
  writeFileSync(join(out, `${name}.gz`), gz);
  sizes.set(name, { raw: body.byteLength, br: br.byteLength, gz: gz.byteLength });
}

// The shell with a typical configuration stands for the HTML of a real app.
const shell = Buffer.from(
  renderShell(
    resolveConfig({
      title: 'ASL full-text extraction',
      apiBase: '/api/asl',
      newTask: {
        title: 'New batch',
        submitLabel: 'Start batch',
        options: true,
        fields: [{ kind: 'multiselect', name: 'documentIds', label: 'Papers', source: { path: '/documents?limit=1000', list: 'documents', value: 'id', label: 'title', detail: 'filename' } }],
      },
      columns: [{ label: 'File', path: 'snapshot.filename' }],
      exports: [{ label: 'CSV', path: '/tasks/{id}/results.csv' }],
    }),
    manifest,
  ),
);
sizes.set('index.html (typical)', { raw: shell.byteLength, br: brotliCompressSync(shell).byteLength, gz: gzipSync(shell, { level: 9 }).byteLength });

const kb = (n: number) => `${(n / 1000).toFixed(1)} kB`;
const firstScreen = ['index.html (typical)', manifest.js, manifest.css, manifest.icon].map((n) => sizes.get(n)!);
const total = (k: 'raw' | 'br' | 'gz') => firstScreen.reduce((sum, s) => sum + s[k], 0);
console.log('@fanout/console UI (dist/ui):');
for (const [name, s] of sizes) if (!name.endsWith('.map')) console.log(`  ${name.padEnd(30)} ${kb(s.raw).padStart(9)}  br ${kb(s.br).padStart(8)}  gzip ${kb(s.gz).padStart(8)}`);
console.log(`  first screen over the wire: ${kb(total('br'))} brotli, ${kb(total('gz'))} gzip (budget ${kb(BUDGET)})`);
if (total('gz') > BUDGET) {
  console.error(`build-ui: the first screen weighs ${kb(total('gz'))} gzipped, over the ${kb(BUDGET)} budget`);
  process.exit(1);
}
