import { fileURLToPath } from 'node:url';
import type { ViteUserConfig } from 'vitest/config';

// Workspace packages resolve to their TypeScript sources in tests (the `dev-source` export
// condition), so a test never runs against a stale build.
const conditions = ['dev-source', 'module', 'node', 'development|production'];

/**
 * The shared test settings: real PostgreSQL started once per run by the global setup (or the
 * server in DATABASE_URL), test files in forked processes, two at a time on a 2-core machine.
 */
export const preset: ViteUserConfig = {
  resolve: { conditions },
  ssr: { resolve: { conditions, externalConditions: ['node'] } },
  test: {
    globalSetup: [fileURLToPath(new URL('../testdb/src/global-setup.ts', import.meta.url))],
    pool: 'forks',
    // Leak checks collect garbage before they measure.
    execArgv: ['--expose-gc'],
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
    reporters: ['default'],
    sequence: { concurrent: false },
  },
};
