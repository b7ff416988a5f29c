import { consoleLogger, createFanout, type Fanout, type FanoutDefinition, type FanoutRuntimeOptions, type Logger } from '@fanout/core';
import { prismaFanoutStore } from '@fanout/prisma-adapter';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient } from '../generated/prisma/client.ts';

export interface AppRuntime extends AsyncDisposable {
  prisma: PrismaClient;
  fanout: Fanout;
  close(): Promise<void>;
}

/**
 * One process's database side: a Prisma client on a `pg` pool (through @prisma/adapter-pg), the
 * Fanout store over both, and a runtime whose pg-boss uses the same database.
 */
export function createAppRuntime(options: {
  databaseUrl: string;
  definitions: readonly FanoutDefinition[];
  logger?: Logger;
  poolSize?: number;
  worker?: FanoutRuntimeOptions['worker'];
  maintenance?: FanoutRuntimeOptions['maintenance'];
  /** pg-boss supervision pass (fails jobs of dead workers). @default 15 */
  superviseIntervalSeconds?: number;
}): AppRuntime {
  const poolSize = options.poolSize ?? 10;
  // One pool for Prisma and for the store's per-batch statements (see `prismaFanoutStore`'s `pool`).
  const pool = new pg.Pool({ connectionString: options.databaseUrl, max: poolSize });
  // An idle connection that dies (server restart, proxy timeout) is dropped by the pool; without a
  // listener its 'error' event would end the process.
  const logger = options.logger ?? consoleLogger('warn');
  pool.on('error', (error) => logger.warn('idle database connection lost', { error: error.message }));
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  const fanout = createFanout({
    store: prismaFanoutStore(prisma, { pool }),
    boss: {
      connectionString: options.databaseUrl,
      max: poolSize,
      ...(options.superviseIntervalSeconds ? { superviseIntervalSeconds: options.superviseIntervalSeconds, monitorIntervalSeconds: options.superviseIntervalSeconds } : {}),
    },
    definitions: options.definitions,
    logger,
    ...(options.worker ? { worker: options.worker } : {}),
    ...(options.maintenance ? { maintenance: options.maintenance } : {}),
  });
  const close = async () => {
    await fanout.stop();
    await prisma.$disconnect();
    await pool.end();
  };
  return { prisma, fanout, close, [Symbol.asyncDispose]: close };
}
