// An IIT QC worker process (run several): DATABASE_URL, FANOUT_LLM_*; see README.
import { runMain, runWorker } from '@fanout/kit';
import app from './app.ts';

runMain(() => runWorker(app), 'iit-worker');
