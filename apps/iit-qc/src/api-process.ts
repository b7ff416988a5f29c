// An IIT QC API process (run several): DATABASE_URL, FANOUT_TOKENS, PORT, IIT_STORAGE_DIR; see README.
import { runApi, runMain } from '@fanout/kit';
import app from './app.ts';

runMain(() => runApi(app), 'iit-api');
