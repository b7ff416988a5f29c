#!/usr/bin/env node
// The build guard every published package runs before it is packed (`prepack`, so `pnpm pack`,
// `pnpm publish` and `changeset publish` all pass through it): a tarball without its build would
// ship `src/` only and fail at the consumer's first import. It checks what a consumer resolves,
// not how it was built: every file the `exports` map (and `bin`) points at exists, and the README
// and LICENSE the registry page shows are there.
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const dir = process.cwd();
const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
const problems = [];

/** Every target of an exports entry, except the workspace-only `dev-source` condition. */
function targets(entry) {
  if (typeof entry === 'string') return [entry];
  if (entry === null || typeof entry !== 'object') return [];
  return Object.entries(entry).flatMap(([condition, value]) => (condition === 'dev-source' ? [] : targets(value)));
}

for (const [subpath, entry] of Object.entries(manifest.exports ?? {})) {
  for (const target of targets(entry)) {
    // A pattern export (`./migrations/*`) names a folder of files: its fixed part must exist.
    const fixed = target.includes('*') ? target.slice(0, target.indexOf('*')) : target;
    if (!existsSync(path.join(dir, fixed))) problems.push(`exports["${subpath}"] -> ${target} is missing`);
  }
}
const bins = typeof manifest.bin === 'string' ? [manifest.bin] : Object.values(manifest.bin ?? {});
for (const bin of bins) if (!existsSync(path.join(dir, bin))) problems.push(`bin ${bin} is missing`);
for (const file of ['README.md', 'LICENSE']) {
  if (!existsSync(path.join(dir, file)) || statSync(path.join(dir, file)).size === 0) problems.push(`${file} is missing`);
}

if (problems.length > 0) {
  console.error(`${manifest.name}: not packed, the build is incomplete:\n  ${problems.join('\n  ')}\nRun \`pnpm build\` (turbo run build) first.`);
  process.exit(1);
}
