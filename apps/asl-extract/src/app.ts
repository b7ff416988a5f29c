// The ASL app's wiring for the Fanout kit: configuration, services, routes, exports, console,
// and what a local run starts. The fan-out itself is in definition.ts.
import { join } from 'node:path';
import { defineApp, intVar, stringVar } from '@fanout/kit';
import { z } from 'zod';
import { PrismaClient } from '../generated/prisma/client.ts';
import { aslExtract } from './definition.ts';
import { OfflineExtractor } from './extract/offline.ts';
import { OpenAiExtractor } from './extract/openai.ts';
import { startSimulatedLlm } from './extract/simulated-llm.ts';
import { createSampleLibrary } from './library/sample.ts';
import { libraryRoutes } from './library/routes.ts';
import { FileStorage } from './library/storage.ts';
import { RESULT_COLUMNS, resultRows } from './results.ts';

export default defineApp({
  name: 'asl',
  title: 'ASL full-text extraction',
  module: import.meta.url,
  prisma: (adapter) => new PrismaClient({ adapter }),
  migrations: [new URL('../prisma/migrations', import.meta.url)],
  env: {
    ASL_STORAGE_DIR: stringVar().optional(),
    ASL_LLM_BASE_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
    ASL_LLM_API_KEY: stringVar().default(''),
    ASL_LLM_MODEL: stringVar().default('gpt-4o-mini'),
    ASL_LLM_CONCURRENCY: intVar({ min: 1, max: 1000 }).default(5),
    ASL_LLM_PER_MINUTE: intVar({ min: 1 }).optional(),
  },
  setup({ prisma, env }) {
    const storage = new FileStorage(env.ASL_STORAGE_DIR ?? join(env.FANOUT_DATA_DIR, 'asl', 'files'));
    const llm = env.ASL_LLM_BASE_URL ? { baseUrl: env.ASL_LLM_BASE_URL, apiKey: env.ASL_LLM_API_KEY, model: env.ASL_LLM_MODEL } : null;
    const extractor = llm ? new OpenAiExtractor(llm) : new OfflineExtractor();
    const llmPerMinute = env.ASL_LLM_PER_MINUTE ?? (llm ? 600 : null);
    return { storage, extractor, definition: aslExtract({ prisma, storage, extractor, llmConcurrency: env.ASL_LLM_CONCURRENCY, llmPerMinute }) };
  },
  routes: ({ prisma }) => libraryRoutes(prisma),
  results: ({ prisma, fanout }) => ({ name: 'asl', rows: (task) => resultRows(prisma, fanout, task), columns: RESULT_COLUMNS }),
  console: {
    newTask: {
      title: 'New batch',
      submitLabel: 'Start batch',
      fields: [{ kind: 'multiselect', name: 'documentIds', label: 'Papers', min: 1, source: { path: '/documents?limit=1000', list: 'documents', value: 'id', label: 'title', detail: 'filename' } }],
      options: true,
    },
    columns: [
      { label: 'File', path: 'snapshot.filename' },
      { label: 'Fields found', path: 'result.fieldsFound', format: 'number' },
      { label: 'Model', path: 'result.model' },
    ],
  },
  local: {
    port: 3000,
    async seed({ prisma, services }, tenant) {
      if ((await prisma.kbDocument.count({ where: { owner: tenant } })) > 0) return;
      const ids = await createSampleLibrary(prisma, services.storage, tenant, 60);
      return `library:  ${ids.length} generated papers (a few corrupt or encrypted) in ${services.storage.root}`;
    },
    // Unless an LLM is configured (or ASL_EXTRACTOR=offline), a simulated one answers, with the
    // latency and the 429s and 503s of a real provider, so a local run shows the limits at work.
    async services() {
      if (process.env.ASL_LLM_BASE_URL || process.env.ASL_EXTRACTOR === 'offline') return [];
      const llm = await startSimulatedLlm();
      return [{ env: { ASL_LLM_BASE_URL: llm.baseUrl, ASL_LLM_MODEL: 'simulated-llm' }, describe: `LLM:      simulated at ${llm.baseUrl} (0.4-1.8 s an answer, some 429 and 503)`, close: llm.close }];
    },
  },
});
