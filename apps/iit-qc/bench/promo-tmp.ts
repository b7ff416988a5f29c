import { randomUUID, createHash } from 'node:crypto';
import { chmodSync, copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { Session } from 'node:inspector';
import { appMigrations } from '@fanout/kit';
import { applyMigrations, startPostgres, withDatabase } from '@fanout/testdb';
import pg from 'pg';
import app from '../src/app.ts';
import { importUpload, type Study } from '../src/data/import.ts';
import { evaluateSubject } from '../src/rules/engine.ts';
import { storeRuleSet } from '../src/routes/rule-sets.ts';
import { loadSubject, runContext, runSubjects, saveSubject, snapshotRun } from '../src/run/run-store.ts';

const DATA = fileURLToPath(new URL('../data/cdiscpilot01-sdtm/', import.meta.url));
const RULES = readFileSync(fileURLToPath(new URL('../rules/cdiscpilot01.yaml', import.meta.url)), 'utf8');
const dir = mkdtempSync(join(tmpdir(), 'iit-promo-'));
chmodSync(dir, 0o711);
const server = await startPostgres({ dataDir: join(dir, 'pg') });
const admin = new pg.Client({ connectionString: server.url });
await admin.connect();
await admin.query('CREATE DATABASE b');
await admin.end();
const url = withDatabase(server.url, 'b');
await applyMigrations(url, appMigrations(app));
const pool = new pg.Pool({ connectionString: url, max: Number(process.env.POOL ?? 8) });
const dirs = { uploadDir: join(dir, 'incoming'), storageDir: join(dir, 'files') };
const { rows } = await pool.query<Study>("INSERT INTO qc_study (id, tenant, name, standard) VALUES (gen_random_uuid(), 't', 'p', 'sdtm') RETURNING id, tenant, name, standard");
const study = rows[0]!;
for (const f of ['define.xml', ...readdirSync(DATA).filter((f) => /\.xpt(\.gz)?$/.test(f))]) {
  const copy = join(dir, randomUUID());
  copyFileSync(join(DATA, f), copy);
  await importUpload(pool, study, { path: copy, filename: f, mimeType: '', bytes: statSync(copy).size, sha256: createHash('sha256').update(readFileSync(copy)).digest('hex') }, dirs);
}
const ruleSetId = (await storeRuleSet(pool, study, RULES, 't')).id;
const gc = (globalThis as { gc?: () => void }).gc!;
const old = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')!.space_used_size + v8.getHeapSpaceStatistics().find((s) => s.space_name === 'large_object_space')!.space_used_size;
const MB = 2 ** 20;
for (const mode of (process.env.MODES ?? 'load,evaluate,save,load,evaluate,save').split(',')) {
  const runId = randomUUID();
  const run = await snapshotRun(pool, runId, 't', { studyId: study.id, ruleSetId });
  const ctx = await runContext(pool, runId);
  const subjects = [];
  for await (const page of runSubjects(pool, run)) subjects.push(...page);
  gc();
  const session = new Session();
  session.connect();
  const post = (m: string, p?: object) => new Promise<any>((res, rej) => session.post(m, p ?? {}, (e, r) => (e ? rej(e) : res(r))));
  if (process.env.PROFILE) await post('HeapProfiler.startSampling', { samplingInterval: 16384, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: !!process.env.ALL });
  const before = old();
  let minors = 0;
  const obs = new PerformanceObserver((list) => { for (const e of list.getEntries()) if ((e as any).detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) minors++; });
  obs.observe({ entryTypes: ['gc'] });
  const t = performance.now();
  const queue = [...subjects];
  const gateSize = Number(process.env.GATE ?? 1000);
  let inGate = 0;
  const waiting: (() => void)[] = [];
  const enter = async () => {
    if (inGate < gateSize) { inGate++; return; }
    await new Promise<void>((r) => waiting.push(r));
  };
  const leave = () => { const next = waiting.shift(); if (next) next(); else inGate--; };
  const lane = async () => {
    for (let s = queue.shift(); s; s = queue.shift()) {
      await enter();
      let out;
      try {
        const data = await loadSubject(pool, ctx, s.subject, s.site);
        if (mode === 'load') continue;
        out = evaluateSubject(ctx.childRules, data, ctx.trial);
      } finally { leave(); }
      const { findings, tallies } = out;
      if (mode === 'evaluate') continue;
      await saveSubject(pool, runId, s.subject, findings, tallies);
    }
  };
  await Promise.all(Array.from({ length: Number(process.env.LANES ?? 1) }, lane));
  const promoted = old() - before;
  await new Promise((r) => setTimeout(r, 50));
  obs.disconnect();
  console.log({ minors, young: v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')!.space_size / MB });
  if (process.env.PROFILE) {
    const { profile } = await post('HeapProfiler.stopSampling');
    const by = new Map<string, number>();
    const walk = (n: any, stack: string[]) => {
      const f = `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber}`;
      const st = [...stack, f];
      if (n.selfSize) by.set(st.slice(-Number(process.env.DEPTH ?? 4)).join(' < '), (by.get(st.slice(-Number(process.env.DEPTH ?? 4)).join(' < ')) ?? 0) + n.selfSize);
      for (const c of n.children) walk(c, st);
    };
    walk(profile.head, []);
    for (const [k, v] of [...by].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log((v / MB).toFixed(1).padStart(6), k);
  }
  const ms = performance.now() - t;
  gc();
  console.log(JSON.stringify({ mode, lanes: process.env.LANES, gate: process.env.GATE, ms: Math.round(ms), promotedMb: +(promoted / MB).toFixed(1), perSubjectKb: Math.round(promoted / subjects.length / 1024), liveAfterMb: +((old() - before) / MB).toFixed(1) }));
}
await pool.end();
await server.stop();
rmSync(dir, { recursive: true, force: true });
