import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Finding, RuleTally } from '../src/rules/engine.ts';
import { saveSubject } from '../src/run/run-store.ts';
import { qcTest, type QcTest } from './harness.ts';

const finding = (key: string, subject: string, message = 'm', level: Finding['level'] = 'record'): Finding => ({
  key,
  ruleId: `R-${key.split('-')[0]}`,
  level,
  subject,
  site: '701',
  domain: 'AE',
  dataset: 'AE',
  recno: 1,
  variables: ['AETERM'],
  values: ['x'],
  message,
  severity: 'error',
});

describe("a child's save replaces what an earlier attempt of its subject stored", () => {
  let t: QcTest;
  let pool: pg.Pool;
  const runId = randomUUID();
  const stored = async (subject: string) => ({
    findings: (await pool.query('SELECT key, message, level FROM qc_finding WHERE run_id = $1 AND subject = $2 ORDER BY key', [runId, subject])).rows,
    errors: (await pool.query('SELECT rule_id, count, message FROM qc_rule_error WHERE run_id = $1 AND subject = $2 ORDER BY rule_id', [runId, subject])).rows,
  });

  beforeAll(async () => {
    t = await qcTest();
    pool = t.rt.ctx.services.pool;
    await pool.query(
      "INSERT INTO qc_run (task_id, study_id, tenant, rule_set_id, datasets, subjects, stage) VALUES ($1, gen_random_uuid(), 'team-a', gen_random_uuid(), '[]', 3, 'checking')",
      [runId],
    );
  }, 60_000);

  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
  });

  it('keeps the second attempt only: its findings (same keys included), its rule errors, and the study-level findings', async () => {
    await pool.query("INSERT INTO qc_finding (run_id, key, rule_id, level, subject, message, severity) VALUES ($1, 'S-study', 'S', 'study', 'A', 'study', 'error')", [runId]);
    const first = new Map<string, RuleTally>([['R-a', { errors: 2, firstError: 'first' }], ['R-b', { errors: 1, firstError: null }]]);
    await saveSubject(pool, runId, 1, 'A', [finding('a-1', 'A', 'first'), finding('a-2', 'A', 'first'), finding('b-1', 'A', 'first')], first);
    await saveSubject(pool, runId, 1, 'B', [finding('a-9', 'B')], new Map());
    await saveSubject(pool, runId, 1, 'A', [finding('a-2', 'A', 'second'), finding('c-1', 'A', 'second'), finding('c-1', 'A', 'duplicate key')], new Map([['R-a', { errors: 5, firstError: 'second' }]]));
    expect(await stored('A')).toEqual({
      findings: [
        { key: 'S-study', message: 'study', level: 'study' },
        { key: 'a-2', message: 'second', level: 'record' },
        { key: 'c-1', message: 'second', level: 'record' },
      ],
      errors: [{ rule_id: 'R-a', count: 5, message: 'second' }],
    });
    expect((await stored('B')).findings).toEqual([{ key: 'a-9', message: 'm', level: 'record' }]);
    await saveSubject(pool, runId, 1, 'A', [], new Map());
    expect(await stored('A')).toEqual({ findings: [{ key: 'S-study', message: 'study', level: 'study' }], errors: [] });
  });

  it('replaces a subject with more findings than one statement takes, all or nothing', async () => {
    const many = Array.from({ length: 4500 }, (_, i) => finding(`m-${i}`, 'C'));
    await saveSubject(pool, runId, 1, 'C', many, new Map([['R-m', { errors: 1, firstError: 'e' }]]));
    await saveSubject(pool, runId, 1, 'C', many.slice(100), new Map());
    const after = await stored('C');
    expect(after.findings).toHaveLength(4400);
    expect(after.errors).toEqual([]);
    // A page that fails (a record number that is not a number) leaves the earlier save whole.
    await expect(saveSubject(pool, runId, 1, 'C', [...many.slice(0, 2500), { ...finding('bad', 'C'), recno: 'x' as unknown as number }], new Map())).rejects.toThrow();
    expect((await stored('C')).findings).toHaveLength(4400);
  });
});
