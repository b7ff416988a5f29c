import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, startProcess, type PodProcess, type TestDatabase } from '@fanout/testdb';
import { migrations } from '../src/migrations.ts';
import { createAslRuntime, type AslRuntime } from '../src/runtime.ts';

const apiPath = fileURLToPath(new URL('../src/api-process.ts', import.meta.url));
const workerPath = fileURLToPath(new URL('../src/worker-process.ts', import.meta.url));

export const TOKENS = 'token-a:team-a,token-b:team-b';

export interface AslTest extends AsyncDisposable {
  db: TestDatabase;
  storageDir: string;
  /** In-process access to the same database and files (no workers). */
  rt: AslRuntime;
  /** The API process's base URL once started. */
  readonly apiUrl: string | null;
  api(): Promise<PodProcess & { url: string }>;
  workers(count: number, env?: Record<string, string | number>): Promise<PodProcess[]>;
  call(method: string, path: string, options?: { token?: string; body?: unknown }): Promise<Response>;
}

/** A fresh database and file store, with API and worker processes started on demand. */
export async function aslTest(): Promise<AslTest> {
  const db = await createTestDatabase({ migrations });
  const storageDir = mkdtempSync(join(tmpdir(), 'asl-files-'));
  const rt = createAslRuntime({ databaseUrl: db.url, storageDir });
  await rt.fanout.start({ managers: false, children: false, maintenance: false });
  const pods: PodProcess[] = [];
  let apiUrl: string | null = null;
  const env = { ASL_STORAGE_DIR: storageDir, ASL_TOKENS: TOKENS, PORT: 0, FANOUT_LEASE_MS: 3000, FANOUT_MAINTENANCE_MS: 500 };
  return {
    db,
    storageDir,
    rt,
    get apiUrl() {
      return apiUrl;
    },
    async api() {
      const pod = await startProcess(apiPath, 'LISTENING', db.url, env);
      pods.push(pod);
      const port = Number(pod.lines.find((l) => l.startsWith('LISTENING'))!.split(' ')[1]);
      apiUrl = `http://127.0.0.1:${port}`;
      return { ...pod, url: apiUrl };
    },
    async workers(count, extra = {}) {
      const started = await Promise.all(Array.from({ length: count }, () => startProcess(workerPath, 'READY', db.url, { ...env, ...extra })));
      pods.push(...started);
      return started;
    },
    async call(method, path, options = {}) {
      if (!apiUrl) throw new Error('start the API process first');
      return fetch(`${apiUrl}/api/asl${path}`, {
        method,
        headers: { authorization: `Bearer ${options.token ?? 'token-a'}`, ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
      });
    },
    async [Symbol.asyncDispose]() {
      await Promise.all(pods.map((p) => p.stop()));
      await rt.close();
      await db.drop();
      rmSync(storageDir, { recursive: true, force: true });
    },
  };
}
