import fs from 'node:fs';
import path from 'node:path';
import { run } from './run.ts';
import { publishedPackages, ROOT } from './workspace.ts';

/** What a release run left: the versions it wrote and what `changeset publish` said. */
export interface ReleaseRun {
  dir: string;
  versions: Record<string, string>;
  publishOutput: string;
  tags: string[];
}

/** The repository as CI checks it out after the build: tracked files, and each package's `dist`. */
function copyRepository(target: string, files: readonly string[]): void {
  for (const file of files) {
    const from = path.join(ROOT, file);
    if (!fs.existsSync(from)) continue; // deleted in the working tree
    fs.mkdirSync(path.dirname(path.join(target, file)), { recursive: true });
    fs.copyFileSync(from, path.join(target, file));
  }
  for (const pkg of publishedPackages()) {
    fs.cpSync(path.join(pkg.dir, 'dist'), path.join(target, pkg.relativeDir, 'dist'), { recursive: true });
  }
}

function releaseEnv(npmCache: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key)));
  return { ...env, npm_config_cache: npmCache, npm_config_update_notifier: 'false', CI: 'true', GIT_AUTHOR_NAME: 'release', GIT_AUTHOR_EMAIL: 'release@localhost', GIT_COMMITTER_NAME: 'release', GIT_COMMITTER_EMAIL: 'release@localhost' };
}

/**
 * Runs the release the way the release workflow does, on a copy of the repository: `changeset
 * version` (the version PR's commit), then `changeset publish` to `registry`, which packs each
 * package through its build guard, publishes what the registry lacks and tags it.
 */
export async function releaseTo(registry: { url: string; token: string }, dir: string, npmCache: string): Promise<ReleaseRun> {
  const repo = path.join(dir, 'repo');
  fs.mkdirSync(repo, { recursive: true });
  const files = await run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT });
  copyRepository(repo, files.stdout.split('\0').filter(Boolean));
  const host = registry.url.replace(/^http:/, '');
  fs.writeFileSync(path.join(repo, '.npmrc'), `registry=${registry.url}\n${host}:_authToken=${registry.token}\n`);
  const env = releaseEnv(npmCache);
  // CI installs before it releases: pnpm resolves workspace: ranges through the installed links.
  // The workspace's store has every package already, so this links and downloads nothing.
  const store = (await run('pnpm', ['store', 'path'], { cwd: ROOT })).stdout.trim();
  const filters = publishedPackages().flatMap((p) => ['--filter', `${p.manifest.name}...`]);
  await run('pnpm', ['install', '--offline', '--frozen-lockfile', '--ignore-scripts', '--reporter=silent', '--store-dir', store, ...filters], { cwd: repo, env, timeoutMs: 120_000 });
  const git = (...args: string[]) => run('git', args, { cwd: repo, env });
  await git('init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(repo, '.git', 'info', 'exclude'), 'node_modules/\n');
  await git('add', '-A');
  await git('commit', '-q', '-m', 'the release candidate');

  const changeset = path.join(ROOT, 'node_modules/@changesets/cli/bin.js');
  await run(process.execPath, [changeset, 'version'], { cwd: repo, env, timeoutMs: 120_000 });
  await git('add', '-A');
  await git('commit', '-q', '-m', 'Version Packages');
  const published = await run(process.execPath, [changeset, 'publish'], { cwd: repo, env, timeoutMs: 240_000 });
  const versions = Object.fromEntries(
    publishedPackages().map((p) => [p.manifest.name, (JSON.parse(fs.readFileSync(path.join(repo, p.relativeDir, 'package.json'), 'utf8')) as { version: string }).version]),
  );
  const tags = (await git('tag', '--list')).stdout.trim().split('\n').filter(Boolean);
  return { dir: repo, versions, publishOutput: `${published.stdout}\n${published.stderr}`, tags };
}
