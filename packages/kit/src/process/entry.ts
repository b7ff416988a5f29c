// A generic process entry: `FANOUT_ROLE=api|worker|migrate FANOUT_APP_MODULE=<file URL or path> node entry.js`.
// The test harness starts an app's API and worker processes through it.
import { pathToFileURL } from 'node:url';
import type { AppSpec } from '../app/define-app.ts';
import { runApi } from './api.ts';
import { runMigrate } from './migrate.ts';
import { runMain } from './shutdown.ts';
import { runWorker } from './worker.ts';

runMain(async () => {
  const role = process.env.FANOUT_ROLE;
  const module = process.env.FANOUT_APP_MODULE;
  if (role !== 'api' && role !== 'worker' && role !== 'migrate') throw new Error(`FANOUT_ROLE: must be api, worker or migrate (got ${JSON.stringify(role ?? '')})`);
  if (!module) throw new Error('FANOUT_APP_MODULE: the module that default-exports the app is required');
  const app = ((await import(module.startsWith('file:') ? module : pathToFileURL(module).href)) as { default?: AppSpec }).default;
  if (!app?.name || !app.setup) throw new Error(`FANOUT_APP_MODULE: ${module} has no app as its default export (defineApp)`);
  await (role === 'api' ? runApi(app) : role === 'worker' ? runWorker(app) : runMigrate(app));
}, 'fanout');
