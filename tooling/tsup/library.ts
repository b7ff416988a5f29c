import type { Options } from 'tsup';

/** How every published package is built: ESM with declarations and source maps, for Node 22+. */
export function library(entry: Record<string, string>, extra: Options = {}): Options {
  return { entry, format: ['esm'], dts: true, sourcemap: true, clean: true, target: 'node22', ...extra };
}
