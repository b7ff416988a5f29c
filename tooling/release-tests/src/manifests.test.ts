import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { codeBlocks } from './readme.ts';
import { floorOf, publishedPackages, ROOT, sharedPeerRanges, workspacePackages, type Manifest } from './workspace.ts';

// What every published package promises before anyone installs it: the files a registry page
// and a lawyer look for, where it comes from, a dependency contract with upper bounds and one
// copy of everything shared, one version for all, and a changelog that names every migration.

const published = publishedPackages();
const root = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as Manifest;
const privateNames = new Set(workspacePackages().filter((p) => p.manifest.private).map((p) => p.manifest.name));
const publishedNames = new Set(published.map((p) => p.manifest.name));
const REPOSITORY = 'https://github.com/fanout-dev/fanout';

describe.each(published.map((p) => [p.manifest.name, p] as const))('%s', (_name, { dir, relativeDir, manifest }) => {
  it('is MIT with the LICENSE file, has a README that installs it and links the main README', () => {
    expect(manifest.license).toBe('MIT');
    expect(fs.readFileSync(path.join(dir, 'LICENSE'), 'utf8')).toBe(fs.readFileSync(path.join(ROOT, 'LICENSE'), 'utf8'));
    const readme = fs.readFileSync(path.join(dir, 'README.md'), 'utf8');
    expect(readme.startsWith(`# ${manifest.name}\n`)).toBe(true);
    expect(codeBlocks(readme).some((b) => b.lang === 'sh' && b.code.includes(`install`) && b.code.includes(manifest.name))).toBe(true);
    expect(codeBlocks(readme).some((b) => b.lang === 'ts')).toBe(true);
    expect(readme).toContain(`](${REPOSITORY}#`);
  });

  it('says where it comes from, and publishes publicly', () => {
    expect(manifest.repository).toEqual({ type: 'git', url: `git+${REPOSITORY}.git`, directory: relativeDir });
    expect(root.repository?.url).toBe(manifest.repository?.url);
    expect(manifest.homepage).toBe(`${REPOSITORY}/tree/main/${relativeDir}#readme`);
    expect(manifest.bugs).toEqual({ url: `${REPOSITORY}/issues` });
    expect(manifest.publishConfig).toEqual({ access: 'public' });
    expect(manifest.description?.length).toBeGreaterThan(20);
  });

  it('packs its build and changelog, behind the build guard', () => {
    expect(manifest.files).toEqual(expect.arrayContaining(['dist', 'CHANGELOG.md']));
    expect(manifest.scripts?.prepack).toBe('node ../../scripts/check-pack.mjs');
    expect(manifest.scripts?.['lint:package']).toBe('publint --strict');
  });

  it('depends on no private package, and on its @fanout/* peers through workspace ranges', () => {
    for (const field of ['dependencies', 'peerDependencies', 'devDependencies'] as const) {
      for (const [name, range] of Object.entries(manifest[field] ?? {})) {
        expect(privateNames.has(name), `${field}: ${name} is never published`).toBe(false);
        if (publishedNames.has(name)) expect(range, `${field}: ${name}`).toMatch(field === 'devDependencies' ? /^workspace:/ : /^workspace:\^$/);
      }
    }
    // What an app imports beside this package is a peer, so the app's copy is the only one.
    for (const name of ['@fanout/core', 'zod', 'pg-boss', 'pg', '@prisma/client', '@prisma/adapter-pg', 'hono']) {
      expect(manifest.dependencies?.[name], `${name} is a peer, not a dependency`).toBeUndefined();
    }
    if (manifest.name !== '@fanout/core' && Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies }).some((n) => n.startsWith('@fanout/') && n !== '@fanout/console' && n !== '@fanout/testdb')) {
      expect(manifest.peerDependencies?.['@fanout/core']).toBe('workspace:^');
    }
  });

  it('bounds every peer range above, with the same range as every other package', () => {
    const shared = sharedPeerRanges();
    for (const [name, range] of Object.entries(manifest.peerDependencies ?? {})) {
      if (range.startsWith('workspace:')) continue;
      expect(() => floorOf(range), `${name}: ${range}`).not.toThrow();
      if (!manifest.peerDependenciesMeta?.[name]?.optional) expect(range, name).toBe(shared[name]);
    }
  });
});

describe('all published packages', () => {
  it('share one version, released together (a fixed changesets group), private packages never versioned', () => {
    expect(new Set(published.map((p) => p.manifest.version)).size).toBe(1);
    const config = JSON.parse(fs.readFileSync(path.join(ROOT, '.changeset', 'config.json'), 'utf8')) as { fixed: string[][]; privatePackages: unknown; access: string };
    expect(config.fixed.map((group) => [...group].sort())).toEqual([[...publishedNames].sort()]);
    expect(config.privatePackages).toEqual({ version: false, tag: false });
    expect(config.access).toBe('public');
  });

  it("are listed in the README's table of peer ranges, with the manifests' ranges", () => {
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    for (const [name, range] of Object.entries(sharedPeerRanges())) {
      const row = readme.split('\n').find((line) => line.startsWith('| ') && line.includes(`\`${name}\``) && /\| `\^/.test(line));
      expect(row, `README: a row for ${name}`).toBeDefined();
      expect(row, name).toContain(`| \`${range}\` |`);
    }
  });

  it('name every Fanout migration in a pending changeset or a changelog, so an upgrade says it adds one', () => {
    const migrations = fs.readdirSync(path.join(ROOT, 'packages/prisma-adapter/prisma/migrations'));
    const notes = [
      ...fs.readdirSync(path.join(ROOT, '.changeset')).filter((f) => f.endsWith('.md')).map((f) => path.join(ROOT, '.changeset', f)),
      ...published.map((p) => path.join(p.dir, 'CHANGELOG.md')).filter((f) => fs.existsSync(f)),
    ].map((f) => fs.readFileSync(f, 'utf8'));
    for (const migration of migrations) expect(notes.some((text) => text.includes(migration)), migration).toBe(true);
  });
});

describe('the build guard (prepack)', () => {
  it('refuses to pack a package whose build is missing, naming what is missing', () => {
    const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'fanout-guard-'));
    try {
      const core = published.find((p) => p.manifest.name === '@fanout/core')!;
      fs.mkdirSync(path.join(copy, 'scripts'));
      fs.copyFileSync(path.join(ROOT, 'scripts', 'check-pack.mjs'), path.join(copy, 'scripts', 'check-pack.mjs'));
      const pkg = path.join(copy, 'packages', 'core');
      fs.cpSync(core.dir, pkg, { recursive: true, filter: (from) => !/[/\\](node_modules|dist)$/.test(from) });
      const guard = () => spawnSync(process.execPath, ['../../scripts/check-pack.mjs'], { cwd: pkg, encoding: 'utf8' });
      const refused = guard();
      expect(refused.status).toBe(1);
      expect(refused.stderr).toContain('@fanout/core: not packed, the build is incomplete:');
      expect(refused.stderr).toContain('exports["."] -> ./dist/index.js is missing');
      fs.cpSync(path.join(core.dir, 'dist'), path.join(pkg, 'dist'), { recursive: true });
      expect(guard()).toMatchObject({ status: 0, stderr: '' });
    } finally {
      fs.rmSync(copy, { recursive: true, force: true });
    }
  });
});
