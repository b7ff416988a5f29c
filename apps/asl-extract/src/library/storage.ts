import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import { PermanentError } from '@fanout/core';

const KEY = /^[a-z0-9][a-z0-9/_.-]{0,200}$/i;

/**
 * The knowledge base's file storage: files on local disk under one root, addressed by storage
 * key. Keys cannot leave the root.
 */
export class FileStorage {
  readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  /** Where the file of `key` is (it may not exist). */
  pathOf(key: string): string {
    return this.#path(key);
  }

  // A key that is not one is the same at every attempt: permanent, not retried.
  #path(key: string): string {
    if (!KEY.test(key) || key.includes('..')) throw new PermanentError(`storage key: "${key}" is not a valid key`, { code: 'invalid_storage_key' });
    const path = resolve(join(this.root, key));
    if (!path.startsWith(this.root + sep)) throw new PermanentError(`storage key: "${key}" leaves the storage root`, { code: 'invalid_storage_key' });
    return path;
  }

  async write(key: string, bytes: Uint8Array): Promise<void> {
    const path = this.#path(key);
    await mkdir(resolve(path, '..'), { recursive: true });
    await writeFile(path, bytes);
  }

  /** The file's size in bytes, or null when it does not exist: a limit is checked before a read. */
  async size(key: string): Promise<number | null> {
    try {
      return (await stat(this.#path(key))).size;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  /** The file's bytes, or null when it does not exist. */
  async read(key: string): Promise<Uint8Array | null> {
    try {
      return new Uint8Array(await readFile(this.#path(key)));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }
}
