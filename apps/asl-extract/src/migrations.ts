import { fileURLToPath } from 'node:url';
import { migrationsDir as fanoutMigrations } from '@fanout/prisma-adapter';
import { migrationsDir as eventMigrations } from '@fanout/sse-pg';

/** Every migration the app needs, in order: Fanout's tables, the event payloads, the app's own. */
export const migrations = [fanoutMigrations, eventMigrations, fileURLToPath(new URL('../prisma/migrations', import.meta.url))];
