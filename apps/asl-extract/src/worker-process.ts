// An ASL worker process (run several): DATABASE_URL, ASL_STORAGE_DIR, ASL_LLM_*; see README.
import { runMain, runWorker } from '@fanout/kit';
import app from './app.ts';

runMain(() => runWorker(app), 'asl-worker');
