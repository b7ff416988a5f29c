// The sample a local run loads (`pnpm start`): a load of each sample file once; a start stopped
// before a sample's load is completed by the next, with the upload and spec it had stored.
import { describe, expect, it } from 'vitest';
import app from '../src/app.ts';
import { etlTest } from './harness.ts';

describe('sample data', () => {
  it('starts a load of each sample once, completes a start cut short before a load, and leaves a complete sample alone', async () => {
    await using t = await etlTest();
    const seed = () => app.local!.seed!(t.rt.ctx, 'local');
    const state = async () =>
      (
        await t.pool.query(
          `SELECT (SELECT count(*)::int FROM etl_upload WHERE tenant = 'local') AS uploads, (SELECT count(*)::int FROM etl_spec WHERE tenant = 'local') AS specs,
                  (SELECT array_agg(u.filename ORDER BY u.filename) FROM etl_load l JOIN etl_upload u ON u.id = l.upload_id WHERE l.tenant = 'local') AS loads`,
        )
      ).rows[0];

    expect(await seed()).toBe('samples:  covid_testing_deid.csv.gz and messy_uc.xlsx (specs in apps/dc-etl/data/specs), a load of each started');
    expect(await state()).toEqual({ uploads: 2, specs: 2, loads: ['covid_testing_deid.csv.gz', 'messy_uc.xlsx'] });

    // A start stopped after the spreadsheet's upload and spec were stored, before its load.
    await t.pool.query(`DELETE FROM etl_load WHERE upload_id = (SELECT id FROM etl_upload WHERE filename = 'messy_uc.xlsx')`);
    expect(await seed()).toBe('samples:  messy_uc.xlsx (specs in apps/dc-etl/data/specs), a load of each started');
    expect(await state()).toEqual({ uploads: 2, specs: 2, loads: ['covid_testing_deid.csv.gz', 'messy_uc.xlsx'] });

    expect(await seed()).toBeUndefined();
    expect(await state()).toEqual({ uploads: 2, specs: 2, loads: ['covid_testing_deid.csv.gz', 'messy_uc.xlsx'] });
  }, 120_000);
});
