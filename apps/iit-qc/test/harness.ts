import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { appTest, TEST_TOKEN, type AppTestOf } from '@fanout/kit/testing';
import { waitFor } from '@fanout/testdb';
import app from '../src/app.ts';

export const DATA = fileURLToPath(new URL('../data/', import.meta.url));
export const PILOT = join(DATA, 'cdiscpilot01-sdtm');
export const PILOT_RULES = fileURLToPath(new URL('../rules/cdiscpilot01.yaml', import.meta.url));

export interface QcTest extends AppTestOf<typeof app> {
  storageDir: string;
  json<T = any>(method: string, path: string, body?: unknown): Promise<T>;
  upload(studyId: string, name: string, bytes: Uint8Array, fields?: Record<string, string>): Promise<Response>;
  study(name: string, standard: 'sdtm' | 'redcap'): Promise<string>;
  ruleSet(studyId: string, source: string): Promise<string>;
  run(studyId: string, ruleSetId: string): Promise<string>;
  waitRun(runId: string, timeoutMs?: number): Promise<any>;
  rules(runId: string): Promise<Map<string, { status: string; issues: number; subjects: number; errors: number; reason: string | null }>>;
  findings(runId: string, query?: Record<string, string>): Promise<any[]>;
}

/** The QC app on a fresh database and file store, with API and worker processes on demand. */
export async function qcTest(env: Record<string, string | number> = {}): Promise<QcTest> {
  const storageDir = mkdtempSync(join(tmpdir(), 'iit-files-'));
  const t = await appTest(app, { env: { IIT_STORAGE_DIR: storageDir, ...env } });
  const dispose = t[Symbol.asyncDispose].bind(t);
  const json = async (method: string, path: string, body?: unknown) => {
    const res = await t.call(method, path, body === undefined ? {} : { body });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };
  const self: QcTest = Object.assign(t, {
    storageDir,
    json,
    async upload(studyId: string, name: string, bytes: Uint8Array, fields: Record<string, string> = {}) {
      const form = new FormData();
      for (const [k, v] of Object.entries(fields)) form.set(k, v);
      form.set('file', new Blob([bytes]), name);
      return fetch(`${t.apiUrl}/api/iit/studies/${studyId}/datasets`, { method: 'POST', headers: { authorization: `Bearer ${TEST_TOKEN.a}` }, body: form });
    },
    async study(name: string, standard: 'sdtm' | 'redcap') {
      return (await json('POST', '/studies', { name, standard })).id as string;
    },
    async ruleSet(studyId: string, source: string) {
      return (await json('POST', `/studies/${studyId}/rule-sets`, { source })).id as string;
    },
    async run(studyId: string, ruleSetId: string) {
      return (await json('POST', '/runs', { studyId, ruleSetId })).id as string;
    },
    async waitRun(runId: string, timeoutMs = 120_000) {
      return waitFor(
        async () => {
          const res = await t.call('GET', `/runs/${runId}`);
          if (!res.ok) return undefined;
          const run = (await res.json()) as any;
          return run.stage === 'done' ? run : undefined;
        },
        { timeoutMs, intervalMs: 200, message: `run ${runId} to finish` },
      );
    },
    async rules(runId: string) {
      const { rules } = await json('GET', `/runs/${runId}/rules`);
      return new Map((rules as any[]).map((r) => [r.ruleId, r]));
    },
    async findings(runId: string, query: Record<string, string> = {}) {
      const all: any[] = [];
      let cursor: string | null = null;
      do {
        const q = new URLSearchParams({ ...query, limit: '1000', ...(cursor ? { cursor } : {}) });
        const page: { findings: any[]; nextCursor: string | null } = await json('GET', `/runs/${runId}/findings?${q}`);
        all.push(...page.findings);
        cursor = page.nextCursor;
      } while (cursor);
      return all;
    },
    async [Symbol.asyncDispose]() {
      await dispose();
      rmSync(storageDir, { recursive: true, force: true });
    },
  });
  return self;
}

/** Uploads the pilot study (define.xml first, then every dataset as shipped) and returns its id. */
export async function loadPilot(t: QcTest, name = 'CDISCPILOT01'): Promise<string> {
  const studyId = await t.study(name, 'sdtm');
  const define = await t.upload(studyId, 'define.xml', readFileSync(join(PILOT, 'define.xml')));
  if (define.status !== 201) throw new Error(`define.xml: ${define.status} ${await define.text()}`);
  for (const file of readdirSync(PILOT).filter((f) => /\.xpt(\.gz)?$/.test(f))) {
    const res = await t.upload(studyId, basename(file), readFileSync(join(PILOT, file)));
    if (res.status !== 201) throw new Error(`${file}: ${res.status} ${await res.text()}`);
  }
  return studyId;
}
