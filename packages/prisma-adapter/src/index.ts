export { prismaFanoutStore, PrismaFanoutStore } from './store.ts';
export type { PrismaFanoutStoreOptions } from './store.ts';
export type { PgPoolLike, PrismaClientLike, PrismaQueryable } from './prisma-like.ts';
export { migrationsDir, schemaPath } from './paths.ts';
