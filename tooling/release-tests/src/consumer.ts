import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { quickStart, snippets, writeSnippets } from './readme.ts';
import { run } from './run.ts';

export type PackageManager = 'npm' | 'pnpm';

export interface ConsumerOptions {
  /** A fresh folder outside the workspace. */
  dir: string;
  manager: PackageManager;
  /** How each @fanout/* package is asked for: a tarball path, or a semver range. */
  fanout: Record<string, string>;
  /** The app's own versions of what it shares with Fanout (and the Prisma CLI, the same as the client). */
  peers: Record<string, string>;
  /** npm's cache or pnpm's store, in a temp folder: the test works with empty caches. */
  cacheDir: string;
  /** Registry settings for the project (`.npmrc` lines), e.g. a scope on a local registry. */
  npmrc?: string[];
  /** Take package metadata from the cache when it is there, without asking the registry again. */
  preferOffline?: boolean;
}

/** Settings a module team would start from, made strict; `module` and `moduleResolution` vary. */
const COMPILER_OPTIONS = {
  target: 'ES2023',
  lib: ['ES2024', 'ESNext.Disposable'],
  strict: true,
  exactOptionalPropertyTypes: true,
  noUncheckedIndexedAccess: true,
  verbatimModuleSyntax: true,
  isolatedModules: true,
  allowImportingTsExtensions: true,
  noEmit: true,
  skipLibCheck: true,
  types: ['node'],
};
export const TSCONFIGS = {
  nodenext: { module: 'nodenext', moduleResolution: 'nodenext' },
  bundler: { module: 'preserve', moduleResolution: 'bundler' },
} as const;

function env(options: ConsumerOptions): NodeJS.ProcessEnv {
  // The machine's environment (certificates, proxies, HOME), without what a parent npm or pnpm
  // run put there for its own package.
  const base: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key)));
  Object.assign(base, {
    CI: 'true',
    CHECKPOINT_DISABLE: '1',
    PRISMA_HIDE_UPDATE_MESSAGE: '1',
    // prisma generate never runs the schema engine; it only wants one configured.
    PRISMA_SCHEMA_ENGINE_BINARY: '/bin/true',
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
  });
  if (options.manager === 'npm') base.npm_config_cache = options.cacheDir;
  else base.npm_config_store_dir = options.cacheDir;
  return base;
}

/**
 * A fresh project set up as the README says: the packages and their peers installed, Fanout's
 * models copied in with the package's own CLI, the Prisma client generated, the README's
 * TypeScript blocks in `readme/` and its quick start as `src/main.ts`.
 */
export async function createConsumer(options: ConsumerOptions): Promise<Consumer> {
  const { dir } = options;
  fs.mkdirSync(dir, { recursive: true });
  const [devNames, runtime] = [['prisma', '@types/pg', '@types/node'], { ...options.peers }];
  const devDependencies = Object.fromEntries(devNames.filter((n) => runtime[n]).map((n) => [n, runtime[n]!]));
  for (const name of devNames) delete runtime[name];
  const manifest: Record<string, unknown> = { name: 'fanout-consumer', version: '1.0.0', private: true, type: 'module', dependencies: { ...options.fanout, ...runtime }, devDependencies };
  // pnpm resolves a tarball's own @fanout/* dependencies (the kit's on the console and testdb)
  // from the registry; point them at the tarballs too. npm uses the root's copies as they are.
  const tarballs = Object.fromEntries(Object.entries(options.fanout).filter(([, spec]) => spec.startsWith('file:')));
  if (options.manager === 'pnpm' && Object.keys(tarballs).length > 0) manifest.pnpm = { overrides: tarballs };
  fs.writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  if (options.npmrc) fs.writeFileSync(path.join(dir, '.npmrc'), `${options.npmrc.join('\n')}\n`);

  const processEnv = env(options);
  const began = Date.now();
  const lap = (step: string) => console.log(`${path.basename(dir)}: ${step} at ${((Date.now() - began) / 1000).toFixed(1)} s`);
  // Scripts are off: Prisma's engines would download binaries from outside the npm registry.
  // Optional dependencies are left out: the only one is the embedded PostgreSQL's binaries (the
  // kit's local runs, through @fanout/testdb), and these projects use the test database.
  const offline = options.preferOffline ? ['--prefer-offline'] : [];
  if (options.manager === 'npm') await run('npm', ['install', '--ignore-scripts', '--omit=optional', '--no-audit', '--no-fund', '--loglevel=error', ...offline], { cwd: dir, env: processEnv, timeoutMs: 240_000 });
  else await run('pnpm', ['install', '--ignore-scripts', '--no-optional', '--reporter=silent', '--config.confirmModulesPurge=false', ...offline], { cwd: dir, env: processEnv, timeoutMs: 240_000 });

  lap(`${options.manager} install`);
  // The README's schema files, then Fanout's models through the package's own CLI.
  for (const snippet of snippets().filter((s) => s.readme === 'main' && (s.file === 'prisma/schema/schema.prisma' || s.file === 'prisma.config.ts'))) {
    fs.mkdirSync(path.dirname(path.join(dir, snippet.file!)), { recursive: true });
    fs.writeFileSync(path.join(dir, snippet.file!), snippet.code);
  }
  await run(path.join(dir, 'node_modules/.bin/fanout'), ['copy-schema', 'prisma/schema'], { cwd: dir, env: processEnv });
  await run(path.join(dir, 'node_modules/.bin/prisma'), ['generate'], { cwd: dir, env: processEnv, timeoutMs: 120_000 });

  lap('prisma generate');
  const generatedClient = path.join(dir, 'src/generated/prisma/client.ts');
  if (!fs.existsSync(generatedClient)) throw new Error(`prisma generate wrote no ${generatedClient}`);
  writeSnippets(dir, generatedClient);
  fs.writeFileSync(path.join(dir, 'src/main.ts'), quickStart().code);
  fs.copyFileSync(new URL('./fixtures/readme-globals.d.ts', import.meta.url), path.join(dir, 'readme/globals.d.ts'));
  for (const [name, settings] of Object.entries(TSCONFIGS)) {
    const tsconfig = { compilerOptions: { ...COMPILER_OPTIONS, ...settings }, include: ['src', 'readme', 'prisma.config.ts'] };
    fs.writeFileSync(path.join(dir, `tsconfig.${name}.json`), `${JSON.stringify(tsconfig, null, 2)}\n`);
  }
  return new Consumer(dir, processEnv);
}

export class Consumer {
  readonly dir: string;
  readonly env: NodeJS.ProcessEnv;

  constructor(dir: string, env: NodeJS.ProcessEnv) {
    this.dir = dir;
    this.env = env;
  }

  /** The installed version of a package, as the app resolves it. */
  version(name: string): string {
    return (JSON.parse(fs.readFileSync(path.join(this.dir, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
  }

  /**
   * tsc over the app, the README blocks and the Prisma config; returns the diagnostics, empty when
   * clean. The compiler is the workspace's (the TypeScript version the packages are tested with);
   * everything it reads comes from the project's node_modules.
   */
  async typecheck(config: keyof typeof TSCONFIGS): Promise<string> {
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    const result = await run(process.execPath, [tsc, '-p', `tsconfig.${config}.json`, '--pretty', 'false'], {
      cwd: this.dir,
      env: this.env,
      allowFailure: true,
      timeoutMs: 240_000,
    });
    return `${result.stdout}${result.stderr}`.trim();
  }

  /** Runs the quick start as the README says (`node src/main.ts`) against `databaseUrl`. */
  async runQuickStart(databaseUrl: string, port: number): Promise<string> {
    const result = await run(process.execPath, ['src/main.ts'], { cwd: this.dir, env: { ...this.env, DATABASE_URL: databaseUrl, PORT: String(port) }, timeoutMs: 120_000 });
    return result.stdout;
  }
}
