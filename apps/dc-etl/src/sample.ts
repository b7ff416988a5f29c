import type pg from 'pg';
import type { FileStorage } from './files/storage.ts';

/** Sample data for a local run: stores the sample files and specs (filled in below). */
export async function seedSample(_pool: pg.Pool, _storage: FileStorage, _tenant: string): Promise<string | void> {
  return undefined;
}
