import { consoleLogger, createFanout, type Fanout, type Logger } from '@fanout/core';
import { prismaFanoutStore } from '@fanout/prisma-adapter';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient } from '../generated/prisma/client.ts';
import { aslExtract, type AslDefinition } from './definition.ts';
import { OfflineExtractor } from './extract/offline.ts';
import { OpenAiExtractor } from './extract/openai.ts';
import type { Extractor } from './extract/study.ts';
import { FileStorage } from './library/storage.ts';

export interface AslConfig {
  databaseUrl: string;
  storageDir: string;
  /** From ASL_LLM_BASE_URL / ASL_LLM_API_KEY / ASL_LLM_MODEL; the offline extractor when unset. */
  llm?: { baseUrl: string; apiKey: string; model: string };
  llmConcurrency?: number;
  /** @default 600 when an LLM is configured (ASL_LLM_PER_MINUTE), none for the offline extractor */
  llmPerMinute?: number;
  workerConcurrency?: number;
  logger?: Logger;
  /** Lease and maintenance-loop interval for tests. */
  leaseMs?: number;
  maintenanceMs?: number;
}

export function configFromEnv(env: NodeJS.ProcessEnv, defaults: { databaseUrl?: string; storageDir: string }): AslConfig {
  const databaseUrl = env.DATABASE_URL ?? defaults.databaseUrl;
  if (!databaseUrl) throw new Error('DATABASE_URL is required');
  const number = (name: string) => (env[name] ? Number(env[name]) : undefined);
  const llm =
    env.ASL_LLM_BASE_URL && env.ASL_LLM_MODEL
      ? { baseUrl: env.ASL_LLM_BASE_URL, apiKey: env.ASL_LLM_API_KEY ?? '', model: env.ASL_LLM_MODEL }
      : undefined;
  return {
    databaseUrl,
    storageDir: env.ASL_STORAGE_DIR ?? defaults.storageDir,
    ...(llm ? { llm } : {}),
    ...(number('ASL_LLM_CONCURRENCY') ? { llmConcurrency: number('ASL_LLM_CONCURRENCY')! } : {}),
    ...(number('ASL_LLM_PER_MINUTE') ? { llmPerMinute: number('ASL_LLM_PER_MINUTE')! } : {}),
    ...(number('ASL_WORKER_CONCURRENCY') ? { workerConcurrency: number('ASL_WORKER_CONCURRENCY')! } : {}),
    ...(number('FANOUT_LEASE_MS') ? { leaseMs: number('FANOUT_LEASE_MS')! } : {}),
    ...(number('FANOUT_MAINTENANCE_MS') ? { maintenanceMs: number('FANOUT_MAINTENANCE_MS')! } : {}),
  };
}

export interface AslRuntime extends AsyncDisposable {
  prisma: PrismaClient;
  fanout: Fanout;
  storage: FileStorage;
  definition: AslDefinition;
  extractor: Extractor;
  close(): Promise<void>;
}

export function createAslRuntime(config: AslConfig): AslRuntime {
  const logger = config.logger ?? consoleLogger('warn');
  // One pool for Prisma and for the store's per-batch statements (see `prismaFanoutStore`'s `pool`).
  const pool = new pg.Pool({ connectionString: config.databaseUrl, max: 10 });
  // An idle connection that dies (server restart, proxy timeout) is dropped by the pool; without a
  // listener its 'error' event would end the process.
  pool.on('error', (error) => logger.warn('idle database connection lost', { error: error.message }));
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  const storage = new FileStorage(config.storageDir);
  const extractor: Extractor = config.llm ? new OpenAiExtractor(config.llm) : new OfflineExtractor();
  const definition = aslExtract({
    prisma,
    storage,
    extractor,
    ...(config.llmConcurrency ? { llmConcurrency: config.llmConcurrency } : {}),
    llmPerMinute: config.llmPerMinute ?? (config.llm ? 600 : null),
  });
  const fanout = createFanout({
    store: prismaFanoutStore(prisma, { pool }),
    boss: { connectionString: config.databaseUrl, max: 10 },
    definitions: [definition],
    logger,
    worker: { concurrency: config.workerConcurrency ?? 10, ...(config.leaseMs ? { leaseMs: config.leaseMs } : {}) },
    ...(config.maintenanceMs ? { maintenance: { intervalMs: config.maintenanceMs } } : {}),
  });
  const close = async () => {
    await fanout.stop();
    await prisma.$disconnect();
    await pool.end();
  };
  return { prisma, fanout, storage, definition, extractor, close, [Symbol.asyncDispose]: close };
}
