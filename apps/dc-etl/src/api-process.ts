// An ETL API process (run several): DATABASE_URL, FANOUT_TOKENS, ETL_STORAGE_DIR, PORT; see README.
import { runApi, runMain } from '@fanout/kit';
import app from './app.ts';

runMain(() => runApi(app), 'etl-api');
