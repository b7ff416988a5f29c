import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Encoding } from './encoding.ts';
import type { UiManifest } from './shell.ts';

/** One file of the UI build, with the pre-compressed forms the build wrote beside it. */
export interface Asset {
  body: Uint8Array;
  type: string;
  encoded: Partial<Record<Encoding, Uint8Array>>;
  /** A content-hashed name never changes content, so it may be cached for good. */
  immutable: boolean;
}

export interface UiBuild {
  manifest: UiManifest;
  files: Map<string, Asset>;
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.map': 'application/json; charset=utf-8',
};

const NOT_BUILT = '@fanout/console: the UI is not built; run pnpm build';
const HASHED = /-[A-Z0-9]{8,}\.[a-z]+$/i;

/**
 * The package's `dist/ui`, found from this module's own file: `src/server/` under the
 * `dev-source` condition, `dist/` once bundled; both sit below the package root.
 */
export function defaultUiDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === '@fanout/console') return join(dir, 'dist', 'ui');
      } catch {
        // Not ours; keep climbing.
      }
    }
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new Error(`${NOT_BUILT} (the package root was not found above ${fileURLToPath(import.meta.url)})`);
}

/** Reads every file of a UI build into memory; throws one clear error when there is no build. */
export function loadUiBuild(dir: string): UiBuild {
  const manifestPath = join(dir, 'manifest.json');
  if (!existsSync(manifestPath)) throw new Error(`${NOT_BUILT} (no ${manifestPath})`);
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as UiManifest;
  const files = new Map<string, Asset>();
  const names = new Set(readdirSync(dir));
  for (const name of names) {
    const type = TYPES[extname(name)];
    if (!type) continue; // the manifest and the .gz/.br siblings are not served under their own names
    const encoded: Asset['encoded'] = {};
    if (names.has(`${name}.br`)) encoded.br = readFileSync(join(dir, `${name}.br`));
    if (names.has(`${name}.gz`)) encoded.gzip = readFileSync(join(dir, `${name}.gz`));
    files.set(name, { body: readFileSync(join(dir, name)), type, encoded, immutable: HASHED.test(name) });
  }
  for (const key of ['js', 'css', 'icon'] as const) {
    if (!files.has(manifest[key])) throw new Error(`${NOT_BUILT} (${manifest[key]} is listed in ${manifestPath} but missing)`);
  }
  return { manifest, files };
}
