import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestDatabase, getFreePort, type TestDatabase } from '@fanout/testdb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConsumer, TSCONFIGS, type Consumer } from './consumer.ts';
import { startLocalRegistry, type LocalRegistry } from './registry.ts';
import { releaseTo, type ReleaseRun } from './release.ts';
import { binOf, run } from './run.ts';
import { floorOf, publishedPackages, ROOT, sharedPeerRanges } from './workspace.ts';

// The release as a module team meets it, in one file so the packages are packed once: the
// tarballs installed into fresh projects outside the workspace (npm with the newest versions of
// every supported peer range, pnpm with the lowest), every README's TypeScript typechecked there,
// the README's quick start run (1,000 items, its API, an SSE client), and a real release:
// `changeset version` and `changeset publish` to a local registry, from which a third project
// installs @fanout/* by semver range and runs the quick start again. Caches live in a temp folder,
// so this passes with empty npm and pnpm caches; only the npm registry is reached.

/** The first public version (README, "Releasing"): what the first version pull request makes of 0.0.0. */
const FIRST_PUBLIC_VERSION = '0.1.0';
const currentVersion = publishedPackages()[0]!.manifest.version;
const pendingChangesets = fs.readdirSync(path.join(ROOT, '.changeset')).filter((f) => f.endsWith('.md') && f !== 'README.md');
const STEP_MS = 420_000;

/** The app-side packages besides the shared peers: the HTTP server, types, the Prisma CLI. */
function appVersions(which: 'lowest' | 'newest'): Record<string, string> {
  const ranges: Record<string, string> = { ...sharedPeerRanges(), '@hono/node-server': '^2.1.9', '@types/pg': '^8.11.0' };
  const versions = which === 'newest' ? ranges : Object.fromEntries(Object.entries(ranges).map(([name, range]) => [name, floorOf(range)]));
  // The Prisma CLI is the client's version, as Prisma asks. TypeScript is the workspace's (6.0).
  return { ...versions, prisma: versions['@prisma/client']!, '@types/node': '^24.0.0' };
}

/**
 * Where the projects go: three installs of Prisma, pg-boss and friends write about a gigabyte of
 * small files, several times faster on a RAM disk than on this machine's disk.
 */
function workBase(): string {
  try {
    if (fs.statfsSync('/dev/shm').bavail * fs.statfsSync('/dev/shm').bsize > 4 * 1024 ** 3) return '/dev/shm';
  } catch {
    // no /dev/shm
  }
  return os.tmpdir();
}

/** A step started in beforeAll and awaited by its test; its failure is reported there, not as an unhandled rejection. */
function started<T>(step: () => Promise<T>): Promise<T> {
  const promise = step();
  promise.catch(() => {});
  return promise;
}

interface Packed {
  name: string;
  file: string;
  bytes: number;
  files: string[];
}

let work: string;
let packed: Packed[];
let registry: LocalRegistry | undefined;
const databases: TestDatabase[] = [];
let npmNewest: Promise<Consumer>;
let pnpmLowest: Promise<Consumer>;
let released: Promise<{ release: ReleaseRun; consumer: Consumer }>;

async function database(): Promise<string> {
  const db = await createTestDatabase({ name: 'consumer' });
  databases.push(db);
  return db.url;
}

beforeAll(async () => {
  work = fs.mkdtempSync(path.join(workBase(), 'fanout-release-'));
  const npmCache = path.join(work, 'npm-cache');
  const pnpmStore = path.join(work, 'pnpm-store');
  fs.mkdirSync(path.join(work, 'tarballs'));
  // `pnpm pack` runs each package's build guard (prepack) and resolves workspace: and catalog: ranges.
  packed = await Promise.all(
    publishedPackages().map(async (pkg) => {
      const { stdout } = await run('pnpm', ['pack', '--pack-destination', path.join(work, 'tarballs'), '--json'], { cwd: pkg.dir });
      // The prepack guard's lines come first; the JSON report is the rest.
      const info = JSON.parse(stdout.slice(stdout.search(/^\{/m))) as { filename: string; files: Array<{ path: string }> };
      return { name: pkg.manifest.name, file: info.filename, bytes: fs.statSync(info.filename).size, files: info.files.map((f) => f.path) };
    }),
  );
  console.log(
    `packed (${packed.reduce((sum, p) => sum + p.bytes, 0)} bytes in all):\n${packed.map((p) => `  ${p.name}  ${p.bytes} bytes, ${p.files.length} files`).join('\n')}`,
  );
  const tarballs = Object.fromEntries(packed.map((p) => [p.name, `file:${p.file}`]));

  npmNewest = started(() => createConsumer({ dir: path.join(work, 'npm-newest'), manager: 'npm', fanout: tarballs, peers: appVersions('newest'), cacheDir: npmCache }));
  pnpmLowest = started(() => createConsumer({ dir: path.join(work, 'pnpm-lowest'), manager: 'pnpm', fanout: tarballs, peers: appVersions('lowest'), cacheDir: pnpmStore }));
  released = started(async () => {
    registry = await startLocalRegistry(path.join(work, 'registry'));
    const release = await releaseTo(registry, path.join(work, 'release'), path.join(work, 'release-npm-cache'));
    const version = release.versions['@fanout/core']!;
    const fanout = Object.fromEntries(packed.map((p) => [p.name, `^${version}`]));
    // Peers come from the public registry, through the cache the npm project has filled.
    await npmNewest.catch(() => {});
    const consumer = await createConsumer({
      dir: path.join(work, 'from-registry'),
      manager: 'npm',
      fanout,
      peers: appVersions('newest'),
      cacheDir: npmCache,
      npmrc: [`@fanout:registry=${registry.url}`],
      preferOffline: true,
    });
    return { release, consumer };
  });
}, 120_000);

afterAll(async () => {
  await Promise.allSettled([npmNewest, pnpmLowest, released]);
  await registry?.stop();
  await Promise.all(databases.map((db) => db.drop()));
  if (work) await fs.promises.rm(work, { recursive: true, force: true });
}, 120_000);

describe('the packed packages', () => {
  it('hold their build, README, LICENSE and manifest, and nothing of the workspace', () => {
    for (const { name, files } of packed) {
      expect(files, name).toEqual(expect.arrayContaining(['package.json', 'README.md', 'LICENSE', 'dist/index.js', 'dist/index.d.ts']));
      expect(files.filter((f) => /\.test\.ts$|(^|\/)node_modules\/|\.tsbuildinfo$/.test(f)), name).toEqual([]);
    }
  });

  it('pass attw with the ESM-only profile (every entry point resolves to types and JavaScript)', async () => {
    const attw = binOf('@arethetypeswrong/cli', 'attw');
    const results = await Promise.all(
      packed.map(async ({ name, file }) => ({ name, ...(await run(process.execPath, [attw, file, '--profile', 'esm-only', '--no-definitely-typed', '--format', 'ascii'], { cwd: work, allowFailure: true })) })),
    );
    for (const result of results) expect(result.code, `${result.name}:\n${result.stdout}${result.stderr}`).toBe(0);
  }, STEP_MS);
});

describe('a fresh project with npm and the newest supported versions', () => {
  it('installs the tarballs, and every README block typechecks (nodenext and bundler)', async () => {
    const consumer = await npmNewest;
    const configs = Object.keys(TSCONFIGS) as Array<keyof typeof TSCONFIGS>;
    const diagnostics = await Promise.all(configs.map((config) => consumer.typecheck(config)));
    expect(Object.fromEntries(configs.map((config, i) => [config, diagnostics[i]]))).toEqual({ nodenext: '', bundler: '' });
  }, STEP_MS);

  it('runs the quick start: 1,000 items through its API and an SSE client', async () => {
    const consumer = await npmNewest;
    expect(await consumer.runQuickStart(await database(), await getFreePort())).toContain('event: task.completed: completed, 1000 of 1000 succeeded');
  }, STEP_MS);
});

describe('a fresh project with pnpm and the lowest supported versions', () => {
  it('installs the tarballs with the floor of every peer range, and every README block typechecks', async () => {
    const consumer = await pnpmLowest;
    const lowest = appVersions('lowest');
    for (const name of Object.keys(sharedPeerRanges())) expect(consumer.version(name), name).toBe(lowest[name]);
    // The module settings are the newest project's concern; here the versions are.
    expect(await consumer.typecheck('nodenext')).toBe('');
  }, STEP_MS);

  it('runs the quick start', async () => {
    const consumer = await pnpmLowest;
    expect(await consumer.runQuickStart(await database(), await getFreePort())).toContain('event: task.completed: completed, 1000 of 1000 succeeded');
  }, STEP_MS);
});

describe('a release to a registry, as CI makes it', () => {
  it(`versions every package to one version (${FIRST_PUBLIC_VERSION} the first time) with its changelog, publishes and tags them`, async () => {
    const { release } = await released;
    const version = release.versions['@fanout/core']!;
    expect(Object.values(release.versions)).toEqual(packed.map(() => version));
    if (currentVersion === '0.0.0') expect(version).toBe(FIRST_PUBLIC_VERSION);
    expect(release.tags.sort()).toEqual(packed.map((p) => `${p.name}@${version}`).sort());
    for (const { relativeDir, manifest } of publishedPackages()) {
      const changelog = fs.readFileSync(path.join(release.dir, relativeDir, 'CHANGELOG.md'), 'utf8');
      if (pendingChangesets.length > 0) expect(changelog, manifest.name).toContain(`## ${version}`);
    }
    // The changesets were used up by the version commit.
    expect(fs.readdirSync(path.join(release.dir, '.changeset')).filter((f) => f.endsWith('.md') && f !== 'README.md')).toEqual([]);
  }, STEP_MS);

  it('published manifests name versions, never workspace: or catalog: ranges, and their tarballs carry the changelog', async () => {
    await released;
    for (const { name } of packed) {
      const response = await fetch(`${registry!.url}${name.replace('/', '%2f')}`);
      expect(response.ok, name).toBe(true);
      const document = (await response.json()) as { 'dist-tags': { latest: string }; versions: Record<string, Record<string, unknown> & { dist: { tarball: string } }> };
      const { versions } = (await released).release;
      expect(document['dist-tags'].latest).toBe(versions[name]);
      const published = document.versions[versions[name]!]!;
      expect(JSON.stringify(published), name).not.toMatch(/workspace:|catalog:/);
      const tarball = path.join(work, `${name.replace('/', '-')}.tgz`);
      fs.writeFileSync(tarball, Buffer.from(await (await fetch(published.dist.tarball)).arrayBuffer()));
      const listing = (await run('tar', ['tzf', tarball], { cwd: work })).stdout.split('\n');
      expect(listing, name).toEqual(expect.arrayContaining(['package/CHANGELOG.md', 'package/LICENSE', 'package/README.md', 'package/dist/index.js']));
    }
  }, STEP_MS);

  it('a project that asks for @fanout/* by semver range from the registry runs the quick start', async () => {
    const { consumer, release } = await released;
    for (const { name } of packed) expect(consumer.version(name)).toBe(release.versions[name]);
    expect(await consumer.runQuickStart(await database(), await getFreePort())).toContain('event: task.completed: completed, 1000 of 1000 succeeded');
  }, STEP_MS);
});
