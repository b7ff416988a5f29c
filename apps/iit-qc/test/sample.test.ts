// The sample a local run loads (`pnpm start`): complete once, completed by the next start when a
// start was stopped while loading it, and left alone once complete.
import { describe, expect, it } from 'vitest';
import app from '../src/app.ts';
import { qcTest } from './harness.ts';

describe('sample data', () => {
  it('loads both studies once, completes a load cut short at the next start, and leaves a complete sample alone', async () => {
    await using t = await qcTest();
    const seed = () => app.local!.seed!(t.rt.ctx, 'local');
    const state = async () =>
      (
        await t.rt.db.pool.query(
          `SELECT s.name, (SELECT count(*)::int FROM qc_dataset d WHERE d.study_id = s.id) AS files,
                  (SELECT count(*)::int FROM qc_rule_set r WHERE r.study_id = s.id) AS rule_sets,
                  (SELECT count(*)::int FROM qc_record r JOIN qc_dataset d ON d.id = r.dataset_id WHERE d.study_id = s.id) AS records
           FROM qc_study s WHERE s.tenant = 'local' ORDER BY s.name`,
        )
      ).rows;

    expect(await seed()).toMatch(/^studies: /);
    const loaded = await state();
    expect(loaded.map((s) => s.name)).toEqual(['CDISCPILOT01', 'REDCap clinical trial']);
    expect(loaded.map((s) => s.rule_sets)).toEqual([2, 1]);
    expect(loaded[1]).toMatchObject({ files: 2, records: 500 });

    // A start stopped after the trial's dictionary: its records and rules are missing.
    await t.rt.db.pool.query(`DELETE FROM qc_rule_set WHERE study_id = (SELECT id FROM qc_study WHERE tenant = 'local' AND name = 'REDCap clinical trial')`);
    await t.rt.db.pool.query(`DELETE FROM qc_record WHERE dataset_id IN (SELECT id FROM qc_dataset WHERE filename = 'data.csv')`);
    await t.rt.db.pool.query(`DELETE FROM qc_dataset WHERE filename = 'data.csv'`);
    expect((await state())[1]).toMatchObject({ files: 1, rule_sets: 0, records: 0 });
    expect(await seed()).toMatch(/^studies: /);
    expect(await state()).toEqual(loaded);

    // Complete: nothing loaded twice, nothing said.
    expect(await seed()).toBeUndefined();
    expect(await state()).toEqual(loaded);
  }, 180_000);
});
