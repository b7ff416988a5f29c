import { createPrismaRuntime, type PrismaRuntime, type PrismaRuntimeOptions } from '@fanout/kit';
import { PrismaClient } from '../generated/prisma/client.ts';

export type AppRuntime = PrismaRuntime<PrismaClient>;

/** One process's database side for the demo's client: the kit's pool, client, store and runtime. */
export function createAppRuntime(options: Omit<PrismaRuntimeOptions<PrismaClient>, 'prisma'>): AppRuntime {
  return createPrismaRuntime({ ...options, prisma: (adapter) => new PrismaClient({ adapter }) });
}
