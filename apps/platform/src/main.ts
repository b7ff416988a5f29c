// `pnpm start`: the reference platform on this machine. Every reference app runs in this process
// on one database (an embedded PostgreSQL in .data/ unless DATABASE_URL is set), with its sample
// data loaded, and prints its console's URL. Ctrl-C stops it cleanly.
import { fileURLToPath } from 'node:url';
import asl from '@fanout/asl-extract/app';
import etl from '@fanout/dc-etl/app';
import iit from '@fanout/iit-qc/app';
import { runLocal, runMain } from '@fanout/kit';

runMain(() => runLocal([asl, iit, etl], { dataDir: fileURLToPath(new URL('../../../.data', import.meta.url)) }), 'fanout');
