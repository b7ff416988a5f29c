// The ASL app's wiring for the Fanout kit: configuration, services, routes, exports, console,
// and what a local run starts. The fan-out itself is in definition.ts.
import { join } from 'node:path';
import { defineApp, intVar, stringVar } from '@fanout/kit';
import { llmConfigOf, llmEnv, startSimulatedLlm } from '@fanout/llm';
import { PrismaClient } from '../generated/prisma/client.ts';
import { aslExtract } from './definition.ts';
import { OfflineExtractor } from './extract/offline.ts';
import { OpenAiExtractor } from './extract/openai.ts';
import { createSampleLibrary } from './library/sample.ts';
import { libraryRoutes } from './library/routes.ts';
import { FileStorage } from './library/storage.ts';
import { PdfReader } from './pdf/text.ts';
import { RESULT_COLUMNS, resultRows } from './results.ts';

export default defineApp({
  name: 'asl',
  title: 'ASL full-text extraction',
  module: import.meta.url,
  prisma: (adapter) => new PrismaClient({ adapter }),
  migrations: [new URL('../prisma/migrations', import.meta.url)],
  env: {
    ...llmEnv,
    ASL_STORAGE_DIR: stringVar().optional(),
    /** The largest PDF read, in bytes (a larger one fails as pdf_too_large). */
    ASL_PDF_MAX_BYTES: intVar({ min: 1024 }).default(100 * 1024 * 1024),
    /** The longest one PDF may take to read (past it: pdf_too_complex). */
    ASL_PDF_TIMEOUT_MS: intVar({ min: 100 }).default(60_000),
    /** Memory of one PDF-reading thread, in MB (past it: pdf_too_complex). */
    ASL_PDF_MEMORY_MB: intVar({ min: 32, max: 16_384 }).default(512),
  },
  setup({ prisma, env }) {
    const storage = new FileStorage(env.ASL_STORAGE_DIR ?? join(env.FANOUT_DATA_DIR, 'asl', 'files'));
    const llm = llmConfigOf(env);
    const extractor = llm ? new OpenAiExtractor(llm) : new OfflineExtractor();
    // Threads start with the first PDF: an API process never starts one.
    const pdf = new PdfReader({ maxBytes: env.ASL_PDF_MAX_BYTES, timeoutMs: env.ASL_PDF_TIMEOUT_MS, memoryMb: env.ASL_PDF_MEMORY_MB });
    return { storage, extractor, pdf, definition: aslExtract({ prisma, storage, extractor, pdf, llmLimits: llm }), close: () => pdf.close() };
  },
  routes: ({ prisma }) => libraryRoutes(prisma),
  results: ({ prisma, fanout }) => ({ name: 'asl', rows: (task) => resultRows(prisma, fanout, task), columns: RESULT_COLUMNS }),
  console: {
    newTask: {
      title: 'New batch',
      submitLabel: 'Start batch',
      fields: [{ kind: 'multiselect', name: 'documentIds', label: 'Papers', min: 1, source: { path: '/documents?limit=1000', list: 'documents', value: 'id', label: 'title', detail: 'filename', next: 'nextCursor' } }],
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
    // Unless a model is configured (or ASL_EXTRACTOR=offline), a simulated one answers with the
    // offline extractor's reading, and the latency, 429s and 503s of a real provider.
    async services() {
      if (process.env.FANOUT_LLM_BASE_URL || process.env.ASL_EXTRACTOR === 'offline') return [];
      const offline = new OfflineExtractor();
      const llm = await startSimulatedLlm({ answer: async (messages) => JSON.stringify(await offline.extract(messages.find((m) => m.role === 'user')?.content ?? '')) });
      return [{ env: { FANOUT_LLM_BASE_URL: llm.baseUrl, FANOUT_LLM_MODEL: 'simulated-llm' }, describe: `LLM:      simulated at ${llm.baseUrl} (0.4-1.8 s an answer, some 429 and 503)`, close: llm.close }];
    },
  },
});
