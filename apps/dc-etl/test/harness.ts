import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { appTest, TEST_TOKEN, type AppTestOf } from '@fanout/kit/testing';
import { waitFor } from '@fanout/testdb';
import { parse, stringify } from 'yaml';
import app from '../src/app.ts';

export const DATA = new URL('../data/', import.meta.url);
export const dataPath = (name: string) => new URL(name, DATA).pathname;

export interface EtlTest extends AppTestOf<typeof app> {
  pool: AppTestOf<typeof app>['rt']['ctx']['services']['pool'];
  storageDir: string;
}

/** The ETL app on a fresh database and file store, with API and worker processes on demand. */
export async function etlTest(env: Record<string, string | number> = {}): Promise<EtlTest> {
  const storageDir = mkdtempSync(join(tmpdir(), 'etl-files-'));
  const t = await appTest(app, { env: { ETL_STORAGE_DIR: storageDir, ...env } });
  const dispose = t[Symbol.asyncDispose].bind(t);
  return Object.assign(t, {
    pool: t.rt.ctx.services.pool,
    storageDir,
    async [Symbol.asyncDispose]() {
      await dispose();
      rmSync(storageDir, { recursive: true, force: true });
    },
  });
}

/** A spec file of data/specs with some of its fields replaced. */
export function specText(name: string, patch: Record<string, unknown> = {}): string {
  const spec = parse(readFileSync(dataPath(`specs/${name}`), 'utf8')) as Record<string, unknown>;
  return stringify({ ...spec, ...patch });
}

export interface UploadFile {
  name: string;
  bytes: Uint8Array;
}

export const fileOf = (path: string, name = basename(path)): UploadFile => ({ name, bytes: readFileSync(path) });

/** POST /loads with a file and a spec (multipart), as a client would. */
export async function postLoad(t: EtlTest, file: UploadFile, spec: string, fields: Record<string, string> = {}, token: string = TEST_TOKEN.a): Promise<Response> {
  const form = new FormData();
  form.set('spec', spec);
  for (const [k, v] of Object.entries(fields)) form.set(k, v);
  form.set('file', new Blob([file.bytes]), file.name);
  return fetch(`${t.apiUrl}/api/etl/loads`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
}

export interface LoadView {
  id: string;
  status: string;
  error: string | null;
  manifest: Record<string, any> | null;
  [key: string]: unknown;
}

/** Starts a load and waits for it to leave `loading`. */
export async function runLoad(t: EtlTest, file: UploadFile, spec: string, fields: Record<string, string> = {}, timeoutMs = 120_000): Promise<LoadView> {
  const res = await postLoad(t, file, spec, fields);
  if (res.status !== 202) throw new Error(`POST /loads answered ${res.status}: ${await res.text()}`);
  const { id } = (await res.json()) as { id: string };
  return settled(t, id, timeoutMs);
}

export async function settled(t: EtlTest, id: string, timeoutMs = 120_000): Promise<LoadView> {
  return waitFor(
    async () => {
      const load = (await (await t.call('GET', `/loads/${id}`)).json()) as LoadView;
      return load.status === 'loading' ? null : load;
    },
    { timeoutMs, message: `load ${id} finished` },
  );
}

export async function json<T = any>(res: Response | Promise<Response>): Promise<T> {
  return (await (await res).json()) as T;
}
