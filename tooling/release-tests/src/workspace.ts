import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export interface Manifest {
  name: string;
  version: string;
  private?: boolean;
  description?: string;
  license?: string;
  homepage?: string;
  repository?: { type: string; url: string; directory?: string };
  bugs?: { url: string };
  files?: string[];
  exports?: Record<string, unknown>;
  bin?: Record<string, string>;
  scripts?: Record<string, string>;
  publishConfig?: Record<string, string>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  devDependencies?: Record<string, string>;
}

export interface WorkspacePackage {
  dir: string;
  /** The folder relative to the repository root (`packages/core`). */
  relativeDir: string;
  manifest: Manifest;
}

/** Every package of the workspace (packages/, tooling/, apps/), read from its manifest. */
export function workspacePackages(): WorkspacePackage[] {
  const found: WorkspacePackage[] = [];
  for (const group of ['packages', 'tooling', 'apps']) {
    for (const name of fs.readdirSync(path.join(ROOT, group)).sort()) {
      const file = path.join(ROOT, group, name, 'package.json');
      if (!fs.existsSync(file)) continue;
      found.push({ dir: path.dirname(file), relativeDir: `${group}/${name}`, manifest: JSON.parse(fs.readFileSync(file, 'utf8')) as Manifest });
    }
  }
  return found;
}

/** The packages that are published: every workspace package not marked private. */
export function publishedPackages(): WorkspacePackage[] {
  return workspacePackages().filter((p) => !p.manifest.private);
}

/**
 * The peer ranges the packages declare for what an app shares with them (never `@fanout/*`,
 * which move together), merged; a peer declared with two ranges is a mistake the manifest test
 * reports, and here the first wins.
 */
export function sharedPeerRanges(): Record<string, string> {
  const ranges: Record<string, string> = {};
  for (const { manifest } of publishedPackages()) {
    for (const [name, range] of Object.entries(manifest.peerDependencies ?? {})) {
      if (!name.startsWith('@fanout/') && !manifest.peerDependenciesMeta?.[name]?.optional) ranges[name] ??= range;
    }
  }
  return ranges;
}

/** The lowest version a range admits: the floor of a caret range. */
export function floorOf(range: string): string {
  const match = /^\^(\d+\.\d+\.\d+)$/.exec(range);
  if (!match) throw new Error(`peer range ${range}: expected a caret range (^x.y.z) with an upper bound`);
  return match[1]!;
}
