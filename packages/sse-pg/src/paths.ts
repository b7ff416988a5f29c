import { fileURLToPath } from 'node:url';

/** The SQL migration of the table holding payloads too large for a NOTIFY. */
export const migrationsDir: string = fileURLToPath(new URL('../migrations', import.meta.url));
