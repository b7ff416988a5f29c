import { TEST_TOKEN } from '@fanout/kit/testing';
import { join } from 'node:path';
import { artifactsDir, launchBrowser, seriousViolations, signIn } from '@fanout/browser-testing';
import { waitFor } from '@fanout/testdb';
import { describe, expect, it } from 'vitest';
import { dataPath, etlTest, fileOf, json, postLoad, runLoad, specText } from './harness.ts';

const shots = artifactsDir('dc-etl-console');

describe('the ETL console', () => {
  it("shows a load's overview, chunks, reject reasons, duplicate groups and profile on its task page, and the Loads page", { timeout: 180_000 }, async () => {
    await using t = await etlTest();
    await t.api();
    await t.workers(1);
    const load = await runLoad(t, fileOf(dataPath('medicaldata/covid_testing_deid.csv.gz')), specText('covid.yaml'), { chunkRecords: '4000' });
    expect(load.status).toBe('published');
    const browser = await launchBrowser();
    try {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      const errors = await signIn(page, t.apiUrl!, TEST_TOKEN.a);
      await page.goto(`${t.apiUrl}/#/tasks/${load.id}`);
      page.setDefaultTimeout(20_000);
      const overview = page.getByRole('region', { name: 'Load, table' });
      await overview.getByText('published', { exact: true }).waitFor();
      await page.getByRole('region', { name: 'Chunks, table' }).getByText('loaded').first().waitFor();
      expect(await page.getByRole('region', { name: 'Chunks, table' }).locator('tbody tr').count()).toBe(4);
      const reasons = page.getByRole('region', { name: 'Reject reasons, table' });
      await reasons.getByText('rule:age_max').waitFor();
      await page.getByRole('region', { name: 'Duplicate groups, table' }).locator('tbody tr').first().waitFor();
      await page.getByRole('region', { name: 'Column profile, table' }).getByText('payor_group').waitFor();
      await page.screenshot({ path: join(shots, '1-load.png'), fullPage: true });
      expect(await seriousViolations(page)).toEqual([]);
      // The task's buttons follow the load's own status: a published load is not offered again.
      await page.getByRole('button', { name: /^Discard: task/ }).waitFor();
      expect(await page.getByRole('button', { name: /^Publish: task/ }).count()).toBe(0);

      await page.getByRole('link', { name: 'Loads' }).click();
      await page.getByRole('region', { name: 'All loads, table' }).getByText('covid_testing_deid.csv.gz').waitFor();
      await page.screenshot({ path: join(shots, '2-loads.png'), fullPage: true });
      expect(await seriousViolations(page)).toEqual([]);
      // A load's id leads to its task's page.
      await page.getByRole('region', { name: 'All loads, table' }).getByRole('link', { name: load.id }).click();
      await page.getByRole('region', { name: 'Load, table' }).getByText('published', { exact: true }).waitFor();
      expect(new URL(page.url()).hash).toBe(`#/tasks/${load.id}`);

      // A load held for publishing, watched from its start: its fan-in makes it ready as its task
      // ends, and the page shows it and offers Publish without a reload. Once Publish ran, the
      // load's panel says published and the button is gone.
      const posted = await postLoad(t, fileOf(dataPath('medicaldata/covid_testing_deid.csv.gz')), specText('covid.yaml', { publish: { auto: false } }), { chunkRecords: '8000' });
      expect(posted.status).toBe(202);
      const held = (await posted.json()) as { id: string };
      await page.goto(`${t.apiUrl}/#/tasks/${held.id}`);
      const heldOverview = page.getByRole('region', { name: 'Load, table' });
      await heldOverview.getByText('ready', { exact: true }).waitFor();
      await page.getByRole('button', { name: /^Publish: task/ }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Publish' }).click();
      await page.getByText(/^Publish: task .* done\.$/).waitFor();
      await heldOverview.getByText('published', { exact: true }).waitFor();
      await waitFor(async () => (await page.getByRole('button', { name: /^Publish: task/ }).count()) === 0, { message: 'the Publish button gone' });
      await page.getByRole('button', { name: /^Discard: task/ }).waitFor();
      await page.screenshot({ path: join(shots, '3-published-by-hand.png'), fullPage: true });
      expect(await seriousViolations(page)).toEqual([]);
      expect((await json(t.call('GET', `/loads/${held.id}`))).status).toBe('published');
      expect(errors).toEqual([]);
      await context.close();
    } catch (error) {
      const pages = browser.contexts().flatMap((c) => c.pages());
      if (pages[0]) await pages[0].screenshot({ path: join(shots, 'failure.png'), fullPage: true });
      throw error;
    } finally {
      await browser.close();
    }
    expect((await json(t.call('GET', '/loads', { token: TEST_TOKEN.b }))).loads).toEqual([]);
  });
});
