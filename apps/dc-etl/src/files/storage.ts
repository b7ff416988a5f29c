import { mkdir, rename, rm } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';

const KEY = /^[a-z0-9][a-z0-9/_.-]{0,200}$/;

/**
 * The ETL's file storage: uploads and the sources the manager prepares, on a disk every API and
 * worker process shares, addressed by keys that cannot leave the root.
 */
export class FileStorage {
  readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  /** Where a key's file is. */
  path(key: string): string {
    if (!KEY.test(key) || key.includes('..')) throw new Error(`storage key: "${key}" is not a valid key`);
    const path = resolve(join(this.root, key));
    if (!path.startsWith(this.root + sep)) throw new Error(`storage key: "${key}" leaves the storage root`);
    return path;
  }

  /** The folder uploads are received into (then moved under their key). */
  get incoming(): string {
    return join(this.root, 'incoming');
  }

  /** Moves a received file under its key. */
  async adopt(from: string, key: string): Promise<void> {
    const to = this.path(key);
    await mkdir(dirname(to), { recursive: true });
    await rename(from, to);
  }

  async remove(key: string): Promise<void> {
    await rm(this.path(key), { recursive: true, force: true });
  }
}

export const uploadKey = (id: string) => `uploads/${id}`;
export const loadDir = (id: string) => `loads/${id}`;
