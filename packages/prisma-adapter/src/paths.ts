import { fileURLToPath } from 'node:url';

/** The folder of the shipped SQL migrations (Prisma's `migrations/<name>/migration.sql` layout). */
export const migrationsDir: string = fileURLToPath(new URL('../prisma/migrations', import.meta.url));

/** The shipped `.prisma` file with the Fanout models. */
export const schemaPath: string = fileURLToPath(new URL('../prisma/fanout.prisma', import.meta.url));
