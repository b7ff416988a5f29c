// The trial-data QC app's wiring for the Fanout kit: configuration, services, routes, console,
// and what a local run starts. The fan-out itself is in definition.ts.
import { join } from 'node:path';
import { defineApp, intVar, stringVar } from '@fanout/kit';
import { llmConfigOf, llmEnv, startSimulatedLlm } from '@fanout/llm';
import { PrismaClient } from '../generated/prisma/client.ts';
import { qcRun } from './definition.ts';
import { agentReview } from './review/agent-review.ts';
import { offlineReview } from './review/offline-reviewer.ts';
import { seedSamples } from './sample/seed.ts';
import { discrepancyRoutes } from './routes/discrepancies.ts';
import { queryRoutes } from './routes/queries.ts';
import { reportRoutes } from './routes/reports.ts';
import { runRoutes } from './routes/runs.ts';
import { ruleSetRoutes } from './routes/rule-sets.ts';
import { studyRoutes } from './routes/studies.ts';

export default defineApp({
  name: 'iit',
  title: 'IIT data quality control',
  module: import.meta.url,
  prisma: (adapter) => new PrismaClient({ adapter }),
  migrations: [new URL('../prisma/migrations', import.meta.url)],
  env: {
    ...llmEnv,
    /** Where uploaded files are kept (by hash) and received. @default <FANOUT_DATA_DIR>/iit */
    IIT_STORAGE_DIR: stringVar().optional(),
    /** The largest upload accepted (413 beyond it). @default 268435456 (256 MB) */
    IIT_MAX_UPLOAD_BYTES: intVar({ min: 1024, max: 2 ** 40 }).default(256 * 1024 * 1024),
  },
  setup({ pool, env }) {
    const root = env.IIT_STORAGE_DIR ?? join(env.FANOUT_DATA_DIR, 'iit');
    const llm = llmConfigOf(env);
    return {
      pool,
      storageDir: join(root, 'files'),
      uploadDir: join(root, 'incoming'),
      maxUploadBytes: env.IIT_MAX_UPLOAD_BYTES,
      definition: qcRun({ pool, review: llm ? agentReview(llm) : null }),
    };
  },
  routes: ({ services, fanout }) => [
    ...studyRoutes(services),
    ...ruleSetRoutes(services),
    ...runRoutes({ pool: services.pool, fanout, definition: services.definition }),
    ...discrepancyRoutes(services),
    ...queryRoutes(services),
    ...reportRoutes(services),
  ],
  console: {
    newTask: {
      title: 'New QC run',
      submitLabel: 'Start run',
      fields: [
        { kind: 'select', name: 'studyId', label: 'Study', required: true, source: { path: '/studies', list: 'studies', value: 'id', label: 'name', detail: 'standard' } },
        { kind: 'select', name: 'ruleSetId', label: 'Rule set', required: true, source: { path: '/rule-sets', list: 'ruleSets', value: 'id', label: 'label', detail: 'rules' } },
      ],
    },
    columns: [
      { label: 'Subject', path: 'snapshot.subject' },
      { label: 'Site', path: 'snapshot.site' },
      { label: 'Records', path: 'result.records', format: 'number' },
      { label: 'Findings', path: 'result.findings', format: 'number' },
    ],
  },
  local: {
    port: 3001,
    seed: ({ services }, tenant) => seedSamples(services.pool, tenant, services),
    // Unless a model is configured, a simulated one answers the agent review (deterministically),
    // with the latency, 429s and 503s of a real provider. The ASL app's local run may start one too:
    // each app's calls still count against the same shared limits.
    async services() {
      if (process.env.FANOUT_LLM_BASE_URL) return [];
      const llm = await startSimulatedLlm({ answer: offlineReview, latencyMs: 300 });
      return [{ env: { FANOUT_LLM_BASE_URL: llm.baseUrl, FANOUT_LLM_MODEL: 'simulated-llm' }, describe: `LLM:      simulated at ${llm.baseUrl} for the agent review`, close: llm.close }];
    },
  },
});
