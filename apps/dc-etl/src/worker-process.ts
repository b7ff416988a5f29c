// An ETL worker process (run several): DATABASE_URL, ETL_STORAGE_DIR (the API's); see README.
import { runMain, runWorker } from '@fanout/kit';
import app from './app.ts';

runMain(() => runWorker(app), 'etl-worker');
