// The IIT QC app alone on this machine (`pnpm start` at the repository root runs every app).
import { fileURLToPath } from 'node:url';
import { runLocal, runMain } from '@fanout/kit';
import app from './app.ts';

runMain(() => runLocal([app], { dataDir: fileURLToPath(new URL('../../../.data', import.meta.url)) }), 'iit');
