// Applies Fanout's migrations and this app's to DATABASE_URL (each once): run it before a deploy's processes.
import { runMain, runMigrate } from '@fanout/kit';
import app from './app.ts';

runMain(() => runMigrate(app), 'etl-migrate');
