// The data-cleaning ETL's wiring for the Fanout kit: configuration, services, routes, console,
// and what a local run loads. The fan-out itself is in definition.ts.
import { join } from 'node:path';
import { defineApp, intVar, stringVar } from '@fanout/kit';
import pg from 'pg';
import { PrismaClient } from '../generated/prisma/client.ts';
import { etlLoad } from './definition.ts';
import { FileStorage } from './files/storage.ts';
import { loadRoutes } from './http/loads.ts';
import { warmUp } from './load/warm-up.ts';
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
    /**
     * The most a load's prepared source may take, in bytes (a gzip inflated, a worksheet written
     * out as CSV): beyond it the load fails (too_big) and the partial file goes. @default 17179869184 (16 GiB)
     */
    ETL_MAX_SOURCE_BYTES: intVar({ min: 1 }).default(16 * 1024 ** 3),
    /**
     * Records per chunk (one child each) when a load does not say. Each chunk costs the fan-out
     * runtime 10-20 ms of CPU (claim, settle, log, job statements) whatever its size: at 25,000
     * records that was a tenth of a COVID-shaped load's CPU, at 50,000 half as much.
     */
    ETL_CHUNK_RECORDS: intVar({ min: 1, max: 10_000_000 }).default(50_000),
  },
  setup({ env, logger, role }) {
    // A worker's first chunks should not run as cold code (see warm-up.ts).
    if (role !== 'api') warmUp();
    const storage = new FileStorage(env.ETL_STORAGE_DIR ?? join(env.FANOUT_DATA_DIR, 'etl', 'files'));
    // COPY needs a plain pg connection; the app keeps a small pool of its own beside the kit's.
    const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: Math.min(env.FANOUT_WORKER_CONCURRENCY + 2, 12), application_name: 'fanout-etl-copy' });
    pool.on('error', (error) => logger.warn('idle ETL database connection lost', { error: error.message }));
    const definition = etlLoad({ pool, storage, chunkRecords: env.ETL_CHUNK_RECORDS, maxSourceBytes: env.ETL_MAX_SOURCE_BYTES });
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
    // A load's own views on its task's page (the task id is the load id).
    detailPanels: [
      { title: 'Load', source: { path: '/loads/{id}/overview', list: 'facts' }, columns: [{ label: 'What', path: 'name' }, { label: 'Value', path: 'value' }], live: true, empty: 'The load is being planned.' },
      {
        title: 'Chunks',
        source: { path: '/loads/{id}/chunks', list: 'chunks' },
        columns: [
          { label: 'Chunk', path: 'chunk', format: 'number' },
          { label: 'First line', path: 'firstLine', format: 'number' },
          { label: 'Rows in', path: 'rowsIn', format: 'number' },
          { label: 'Clean', path: 'clean', format: 'number' },
          { label: 'Rejected', path: 'rejected', format: 'number' },
          { label: 'Runs', path: 'runs', format: 'number' },
          { label: 'Status', path: 'status' },
        ],
        live: true,
      },
      {
        title: 'Reject reasons',
        source: { path: '/loads/{id}/reasons', list: 'reasons' },
        columns: [
          { label: 'Reason', path: 'reason' },
          { label: 'Column', path: 'column' },
          { label: 'Rows', path: 'rows', format: 'number' },
          { label: 'Example', path: 'message' },
          { label: 'Sample lines', path: 'linesText' },
          { label: 'First row', path: 'sample' },
        ],
        live: true,
        empty: 'No rejects.',
      },
      {
        title: 'Rejected rows',
        source: { path: '/loads/{id}/rejects', list: 'rejects' },
        columns: [
          { label: 'Line', path: 'line', format: 'number' },
          { label: 'Column', path: 'column' },
          { label: 'Reason', path: 'reason' },
          { label: 'Message', path: 'message' },
          { label: 'Row', path: 'raw' },
        ],
        filters: [{ name: 'reason', label: 'Reason' }, { name: 'column', label: 'Column' }],
        empty: 'No rejects.',
      },
      {
        title: 'Duplicate groups',
        source: { path: '/loads/{id}/duplicates', list: 'duplicates' },
        columns: [
          { label: 'Key', path: 'keyText' },
          { label: 'Kept line', path: 'keptLine', format: 'number' },
          { label: 'Dropped lines', path: 'droppedText' },
        ],
        empty: 'No duplicates (or no dedupe key).',
      },
      {
        title: 'Column profile',
        source: { path: '/loads/{id}/profile', list: 'columns' },
        columns: [
          { label: 'Column', path: 'column' },
          { label: 'Type', path: 'type' },
          { label: 'Nulls', path: 'nullPercent' },
          { label: 'Distinct', path: 'distinct', format: 'number' },
          { label: 'Min', path: 'min' },
          { label: 'Max', path: 'max' },
          { label: 'Top values', path: 'topText' },
        ],
        empty: 'Profiled once every chunk is loaded.',
      },
    ],
    taskActions: [
      // As the load's own status allows: a load over its reject limit is failed although its task completed.
      { label: 'Publish', method: 'POST', path: '/loads/{id}/publish', when: ['completed'], whenApp: { path: '/loads/{id}', field: 'status', values: ['ready'] }, confirm: 'Publish this load to its target table?' },
      {
        label: 'Discard',
        method: 'POST',
        path: '/loads/{id}/discard',
        when: ['completed', 'failed', 'cancelled'],
        whenApp: { path: '/loads/{id}', field: 'status', values: ['ready', 'published', 'failed'] },
        confirm: 'Discard this load? Its published rows, staging, rejects and files are removed.',
      },
    ],
    pages: [
      {
        title: 'Loads',
        slug: 'loads',
        panels: [
          {
            title: 'All loads',
            source: { path: '/loads', list: 'loads' },
            columns: [
              { label: 'Load', path: 'id', format: 'task' },
              { label: 'File', path: 'filename' },
              { label: 'Target', path: 'target' },
              { label: 'Status', path: 'status' },
              { label: 'Rows in', path: 'rowsIn', format: 'number' },
              { label: 'Clean', path: 'clean', format: 'number' },
              { label: 'Rejected', path: 'rejected', format: 'number' },
              { label: 'Why', path: 'error' },
            ],
            empty: 'No loads yet.',
          },
        ],
      },
    ],
  },
  local: {
    port: 3002,
    seed: (ctx, tenant) => seedSample({ pool: ctx.services.pool, storage: ctx.services.storage, fanout: ctx.fanout, definition: ctx.services.definition }, tenant),
  },
});
