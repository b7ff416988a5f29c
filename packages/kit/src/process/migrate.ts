import { applyMigrations } from '@fanout/testdb';
import { appMigrations } from '../app/app-runtime.ts';
import type { AppSpec } from '../app/define-app.ts';
import { ConfigError, loadEnv } from '../config/env.ts';
import { firstConnection } from './database-url.ts';

/**
 * Applies an app's migrations to `DATABASE_URL`: Fanout's, then the app's own, each once, in
 * order, in its own transaction, under a lock (deploys that start together migrate once). What a
 * deployment runs before its API and worker processes, which refuse to start on a database that
 * lacks one of Fanout's (`runLocal` and `appTest` migrate by themselves). Prints
 * `MIGRATED <count>` with the names applied; returns them.
 */
export async function runMigrate(app: AppSpec<any, any, any>, options: { env?: Record<string, string | undefined> } = {}): Promise<string[]> {
  const env = loadEnv(app.env ?? {}, options.env ?? process.env);
  const databaseUrl = env.DATABASE_URL;
  if (!databaseUrl) throw new ConfigError([{ variable: 'DATABASE_URL', rule: 'is required to migrate' }]);
  const applied = await firstConnection(databaseUrl, () => applyMigrations(databaseUrl, appMigrations(app)));
  console.log(`MIGRATED ${applied.length}${applied.length > 0 ? ` (${applied.join(', ')})` : ''}`);
  return applied;
}
