// An ASL API process (run several): DATABASE_URL, FANOUT_TOKENS, PORT; see README.
import { runApi, runMain } from '@fanout/kit';
import app from './app.ts';

runMain(() => runApi(app), 'asl-api');
