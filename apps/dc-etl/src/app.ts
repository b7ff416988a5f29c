// The data-cleaning ETL's wiring for the Fanout kit: configuration, services, routes, console,
// and what a local run loads. The fan-out itself is in definition.ts.
import { join } from 'node:path';
import { defineApp, intVar, stringVar } from '@fanout/kit';
import pg from 'pg';
import { PrismaClient } from '../generated/prisma/client.ts';
import { etlLoad } from './definition.ts';
import { FileStorage } from './files/storage.ts';
import { loadRoutes } from './http/loads.ts';
import { seedSample } from './sample.ts';

export default defineApp({
  name: 'etl',
  title: 'Data-cleaning ETL',
  module: import.meta.url,
  prisma: (adapter) => new PrismaClient({ adapter }),
  migrations: [new URL('../prisma/migrations', import.meta.url)],
  env: {
    /** Where uploads and prepared sources are kept (shared by every API and worker process). */
    ETL_STORAGE_DIR: stringVar().optional(),
    /** The largest upload accepted, in bytes (413 beyond). */
    ETL_MAX_UPLOAD_BYTES: intVar({ min: 1 }).default(2 * 1024 ** 3),
    /** Records per chunk (one child each) when a load does not say. */
    ETL_CHUNK_RECORDS: intVar({ min: 1, max: 10_000_000 }).default(25_000),
  },
  setup({ env, logger }) {
    const storage = new FileStorage(env.ETL_STORAGE_DIR ?? join(env.FANOUT_DATA_DIR, 'etl', 'files'));
    // COPY needs a plain pg connection; the app keeps a small pool of its own beside the kit's.
    const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: Math.min(env.FANOUT_WORKER_CONCURRENCY + 2, 12), application_name: 'fanout-etl-copy' });
    pool.on('error', (error) => logger.warn('idle ETL database connection lost', { error: error.message }));
    const definition = etlLoad({ pool, storage, chunkRecords: env.ETL_CHUNK_RECORDS });
    return { storage, pool, definition, maxUploadBytes: env.ETL_MAX_UPLOAD_BYTES, close: () => pool.end() };
  },
  routes: ({ fanout, services }) => loadRoutes({ pool: services.pool, storage: services.storage, fanout, definition: services.definition, maxUploadBytes: services.maxUploadBytes }),
  console: {
    newTask: {
      title: 'New load',
      submitLabel: 'Start load',
      fields: [
        { kind: 'file', name: 'uploadId', label: 'Data file (CSV, TSV, .gz, .xlsx)', accept: '.csv,.tsv,.gz,.xlsx,.txt', upload: { path: '/uploads', idField: 'uploadId' }, required: true },
        { kind: 'file', name: 'specId', label: 'Mapping spec (YAML or JSON)', accept: '.yaml,.yml,.json', upload: { path: '/specs', idField: 'specId' }, required: true },
        { kind: 'number', name: 'chunkRecords', label: 'Records per chunk', min: 1 },
      ],
    },
    columns: [
      { label: 'Chunk', path: 'snapshot.chunkNo', format: 'number' },
      { label: 'First line', path: 'snapshot.firstLine', format: 'number' },
      { label: 'Rows in', path: 'result.rowsIn', format: 'number' },
      { label: 'Clean', path: 'result.clean', format: 'number' },
      { label: 'Rejected', path: 'result.rejected', format: 'number' },
    ],
  },
  local: {
    port: 3002,
    seed: (ctx, tenant) => seedSample({ pool: ctx.services.pool, storage: ctx.services.storage, fanout: ctx.fanout, definition: ctx.services.definition }, tenant),
  },
});
