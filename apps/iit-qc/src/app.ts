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
import { runViewRoutes } from './routes/run-views.ts';
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
    /** The most a gzip-compressed upload may inflate to (a 413 beyond it, nothing kept). @default 1073741824 (1 GiB) */
    IIT_MAX_INFLATED_BYTES: intVar({ min: 1024, max: 2 ** 40 }).default(1024 ** 3),
    /**
     * Subjects a worker process loads and evaluates at once (its other children wait before
     * loading): what bounds the subject data in the worker's memory. @default 2
     */
    IIT_SUBJECTS_IN_MEMORY: intVar({ min: 1, max: 1000 }).default(2),
  },
  setup({ pool, env }) {
    const root = env.IIT_STORAGE_DIR ?? join(env.FANOUT_DATA_DIR, 'iit');
    const llm = llmConfigOf(env);
    return {
      pool,
      storageDir: join(root, 'files'),
      uploadDir: join(root, 'incoming'),
      maxUploadBytes: env.IIT_MAX_UPLOAD_BYTES,
      maxInflatedBytes: env.IIT_MAX_INFLATED_BYTES,
      definition: qcRun({ pool, review: llm ? agentReview(llm) : null, subjectsInMemory: env.IIT_SUBJECTS_IN_MEMORY }),
    };
  },
  routes: ({ services, fanout }) => [
    ...studyRoutes(services),
    ...ruleSetRoutes(services),
    ...runRoutes({ pool: services.pool, fanout, definition: services.definition }),
    ...discrepancyRoutes(services),
    ...queryRoutes(services),
    ...reportRoutes(services),
    ...runViewRoutes(services),
  ],
  console: {
    newTask: {
      title: 'New QC run',
      submitLabel: 'Start run',
      fields: [
        { kind: 'select', name: 'studyId', label: 'Study', required: true, source: { path: '/studies', list: 'studies', value: 'id', label: 'name', detail: 'standard' } },
        { kind: 'select', name: 'ruleSetId', label: 'Rule set', required: true, source: { path: '/studies/{studyId}/rule-sets', list: 'ruleSets', value: 'id', label: 'label', detail: 'rules' } },
      ],
    },
    columns: [
      { label: 'Subject', path: 'snapshot.subject' },
      { label: 'Site', path: 'snapshot.site' },
      { label: 'Records', path: 'result.records', format: 'number' },
      { label: 'Findings', path: 'result.findings', format: 'number' },
    ],
    detailPanels: [
      {
        title: 'Rules',
        source: { path: '/runs/{id}/rules', list: 'rules' },
        columns: [
          { label: 'Rule', path: 'ruleId' },
          { label: 'Status', path: 'status' },
          { label: 'Issues', path: 'issues', format: 'number' },
          { label: 'Subjects', path: 'subjects', format: 'number' },
          { label: 'Excluded', path: 'excluded', format: 'number' },
          { label: 'Severity', path: 'severity' },
          { label: 'Message', path: 'message' },
          { label: 'Skipped or failed because', path: 'reason' },
        ],
        filters: [{ name: 'status', label: 'Status', options: ['issues', 'passed', 'skipped', 'error'] }],
        live: true,
        empty: 'No rule results yet: they come when the run has finished.',
      },
      {
        title: 'Issues by site',
        source: { path: '/runs/{id}/sites', list: 'sites' },
        columns: [
          { label: 'Site', path: 'site' },
          { label: 'Issues', path: 'issues', format: 'number' },
          { label: 'Subjects', path: 'subjects', format: 'number' },
          { label: 'New', path: 'new', format: 'number' },
          { label: 'Excluded', path: 'excluded', format: 'number' },
        ],
        live: true,
      },
      {
        title: 'New and resolved since the last run',
        source: { path: '/runs/{id}/changes', list: 'changes' },
        columns: [
          { label: 'Rule', path: 'ruleId' },
          { label: 'New', path: 'new', format: 'number' },
          { label: 'Still open', path: 'open', format: 'number' },
          { label: 'Resolved', path: 'resolved', format: 'number' },
        ],
      },
      {
        title: 'Subject by rule',
        source: { path: '/runs/{id}/subject-rules', list: 'cells' },
        columns: [
          { label: 'Subject', path: 'subject' },
          { label: 'Site', path: 'site' },
          { label: 'Rule', path: 'ruleId' },
          { label: 'Issues', path: 'issues', format: 'number' },
        ],
        filters: [{ name: 'rule', label: 'Rule' }, { name: 'subject', label: 'Subject' }, { name: 'site', label: 'Site' }],
        live: true,
      },
      {
        title: 'Findings',
        source: { path: '/runs/{id}/findings', list: 'findings' },
        columns: [
          { label: 'Rule', path: 'ruleId' },
          { label: 'Subject', path: 'subject' },
          { label: 'Dataset', path: 'dataset' },
          { label: 'Record', path: 'recno', format: 'number' },
          { label: 'Variables', path: 'variables', format: 'json' },
          { label: 'Values', path: 'values', format: 'json' },
          { label: 'Message', path: 'message' },
          { label: 'Change', path: 'change' },
        ],
        filters: [{ name: 'rule', label: 'Rule' }, { name: 'subject', label: 'Subject' }, { name: 'site', label: 'Site' }, { name: 'status', label: 'Status', options: ['new', 'open', 'excluded'] }],
        rowName: ['subject', 'ruleId', 'dataset', 'recno'],
        rowActions: [
          { label: 'Open query', method: 'POST', path: '/studies/{studyId}/discrepancies/{key}/queries', prompt: 'Query text' },
          { label: 'Exclude', method: 'POST', path: '/studies/{studyId}/discrepancies/{key}/exclusion', prompt: 'Reason for the exclusion', confirm: 'Exclude this discrepancy from the next runs of the study? They count it apart, not as an issue; this run keeps its findings and counts as they were.' },
        ],
        live: true,
      },
      {
        title: "A subject's records (drill-down: filter by the subject of a finding)",
        source: { path: '/runs/{id}/records', list: 'records' },
        columns: [
          { label: 'Dataset', path: 'dataset' },
          { label: 'Record', path: 'recno', format: 'number' },
          { label: 'Values', path: 'values' },
        ],
        filters: [{ name: 'subject', label: 'Subject', required: true }, { name: 'dataset', label: 'Dataset' }],
        empty: 'Type a subject (USUBJID or record id) to see their records.',
      },
    ],
    exports: [
      { label: 'report (.xlsx)', path: '/runs/{id}/report.xlsx' },
      { label: 'report (JSON)', path: '/runs/{id}/report.json' },
    ],
    pages: [
      {
        title: 'Queries',
        slug: 'queries',
        panels: [
          {
            title: 'Queries, oldest first',
            source: { path: '/queries', list: 'queries' },
            columns: [
              { label: 'Status', path: 'status' },
              { label: 'Age (days)', path: 'ageDays', format: 'number' },
              { label: 'Rule', path: 'ruleId' },
              { label: 'Subject', path: 'subject' },
              { label: 'Site', path: 'site' },
              { label: 'Discrepancy', path: 'message' },
              { label: 'Opened by', path: 'openedBy' },
              { label: 'Updated', path: 'updatedAt', format: 'datetime' },
            ],
            filters: [{ name: 'status', label: 'Status', options: ['OPEN', 'ANSWERED', 'CLOSED'] }],
            rowName: ['subject', 'ruleId', 'status'],
            rowActions: [
              { label: 'Answer', method: 'POST', path: '/queries/{id}/answer', prompt: 'Answer', when: { field: 'status', values: ['OPEN'] } },
              { label: 'Close', method: 'POST', path: '/queries/{id}/close', prompt: 'Closing note', when: { field: 'status', values: ['OPEN', 'ANSWERED'] } },
              { label: 'Reopen', method: 'POST', path: '/queries/{id}/reopen', prompt: 'Why reopen', when: { field: 'status', values: ['ANSWERED', 'CLOSED'] } },
            ],
          },
        ],
      },
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
