import { join } from 'node:path';
import { artifactsDir, launchBrowser, seriousViolations, signIn, type Browser } from '@fanout/browser-testing';
import { waitFor } from '@fanout/testdb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appTest, TEST_TOKEN, type AppTestOf } from '../src/testing/index.ts';
import echo from './fixtures/echo-app.ts';

// An app's own panels, buttons and pages in the console, driven in Chromium: what apps such as
// iit-qc and dc-etl configure instead of writing pages.
const shots = artifactsDir('kit-console-panels');
let t: AppTestOf<typeof echo>;
let browser: Browser;

beforeAll(async () => {
  t = await appTest(echo);
  await t.api();
  await t.workers(1);
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await t?.[Symbol.asyncDispose]();
});

/** A signed-in page on the task's page, and the page's script errors. */
async function openTask(id: string) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const errors = await signIn(page, t.apiUrl!, TEST_TOKEN.a);
  await page.goto(`${t.apiUrl}/#/tasks/${id}`);
  return { context, page, errors };
}

describe("an app's panels in the console", () => {
  it('shows a table of the app on the task page, runs its row action with a prompt, its task button, and its own page', async () => {
    const { id } = (await (await t.call('POST', '/tasks', { body: { input: { count: 5 } } })).json()) as { id: string };
    await waitFor(async () => ((await (await t.call('GET', `/tasks/${id}`)).json()) as { status: string }).status === 'completed', { message: 'the task' });
    const { context, page, errors } = await openTask(id);
    const panel = page.getByRole('region', { name: 'Echoes, table' });
    await panel.getByText('n4', { exact: true }).waitFor();
    expect(await panel.locator('tbody tr').count()).toBe(5);

    await panel.getByRole('button', { name: 'Mark: n2' }).click();
    await page.getByLabel('Note').fill('looks odd');
    await page.getByRole('dialog').getByRole('button', { name: 'Mark' }).click();
    await page.getByText('Mark: done.').waitFor();
    await page.getByRole('button', { name: /^Ping: task/ }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Ping' }).click();
    await page.getByText(/^Ping: task .* done\.$/).waitFor();
    await page.screenshot({ path: join(shots, '1-task-panels.png'), fullPage: true });
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByRole('link', { name: 'Marks' }).click();
    await page.getByRole('heading', { name: 'Marks' }).waitFor();
    const notes = page.getByRole('region', { name: 'Notes, table' });
    await notes.getByText('looks odd').waitFor();
    expect(await notes.locator('tbody tr').allInnerTexts()).toEqual([expect.stringMatching(/^n2\s+looks odd$/), expect.stringMatching(new RegExp(`^${id}\\s+ping$`))]);
    const filter = page.getByRole('group', { name: 'Filters of Notes' }).getByLabel('On');
    await filter.fill('n2');
    await filter.press('Enter');
    await waitFor(async () => (await notes.locator('tbody tr').count()) === 1, { message: 'the filtered notes' });
    await page.screenshot({ path: join(shots, '2-app-page.png'), fullPage: true });
    expect(await seriousViolations(page)).toEqual([]);
    // Another tenant sees none of it.
    expect(await (await t.call('GET', '/marks', { token: TEST_TOKEN.b })).json()).toEqual({ marks: [] });
    expect(errors).toEqual([]);
    await context.close();
  });

  it("says what the app answers when it has nothing of the task (a 404 of a panel's source), not that the panel failed", async () => {
    const { id } = (await (await t.call('POST', '/tasks', { body: { input: { count: 2 } } })).json()) as { id: string };
    const pool = t.rt.ctx.pool;
    await waitFor(async () => (await pool.query(`SELECT 1 FROM echo_mark WHERE tenant = '(fan-in)' AND subject = $1`, [id])).rowCount === 1, { message: 'the fan-in' });
    // As if its fan-in had not run yet (or the app kept nothing of it): the panel's source answers 404.
    await pool.query(`DELETE FROM echo_mark WHERE subject = $1`, [id]);
    const { context, page, errors } = await openTask(id);
    const panel = page.getByRole('region', { name: 'Fan-in' });
    await panel.getByText(`task ${id} has not been fanned in yet`, { exact: true }).waitFor();
    expect(await panel.getByRole('alert').count()).toBe(0);
    expect(await panel.getByRole('button', { name: 'Try again' }).count()).toBe(0);
    await page.screenshot({ path: join(shots, '4-panel-without-data.png'), fullPage: true });
    expect(await seriousViolations(page)).toEqual([]);
    // Its fan-in finishes now, a moment after the task ended (nothing of the task moves any more):
    // the page asks the app again by itself and shows it.
    await pool.query(`INSERT INTO echo_mark (tenant, subject, text) VALUES ('(fan-in)', $1, 'round 1: completed')`, [id]);
    await panel.getByText('round 1: completed', { exact: true }).waitFor({ timeout: 20_000 });
    expect(errors).toEqual([]);
    await context.close();
  });
});

describe('a task whose items retention deleted', () => {
  it("shows the task's own counts and says when its items went, without asking for them", async () => {
    const { id } = (await (await t.call('POST', '/tasks', { body: { input: { count: 4 } } })).json()) as { id: string };
    const pool = t.rt.ctx.pool;
    const state = async () => (await pool.query('SELECT status, round, announced_round, fanin_round FROM fanout_task WHERE id = $1', [id])).rows[0];
    await waitFor(async () => {
      const row = await state();
      return row.status === 'completed' && row.announced_round >= row.round && row.fanin_round >= row.round;
    }, { message: 'the task completed, announced and fanned in' });
    // As if it had finished two days ago, then purged by retention with a day's window.
    await pool.query(`UPDATE fanout_task SET completed_at = now() - interval '2 days' WHERE id = $1`, [id]);
    let purge;
    do purge = await t.rt.fanout.store.purgeFinished!(86_400_000, 1000, ['kit_echo']);
    while (purge.taskId !== null && purge.taskId !== id);
    expect(purge).toMatchObject({ taskId: id, purged: true });

    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const refused: string[] = [];
    page.on('response', (r) => {
      if (r.status() === 410) refused.push(new URL(r.url()).pathname);
    });
    const errors = await signIn(page, t.apiUrl!, TEST_TOKEN.a);
    await page.locator(`li.task-row[data-task-id="${id}"]`).waitFor();
    await page.goto(`${t.apiUrl}/#/tasks/${id}`);
    await page.getByRole('note').filter({ hasText: /Its items and their logs were deleted by retention on .*; the task's counts above stay\./ }).waitFor();
    const tiles = await page.locator('#counts-heading').locator('xpath=..').innerText();
    expect(tiles).toMatch(/Succeeded\s+4/);
    expect(await page.getByRole('button', { name: /^Retry/ }).count()).toBe(0);
    await page.screenshot({ path: join(shots, '3-purged-task.png'), fullPage: true });
    expect(await seriousViolations(page)).toEqual([]);
    // The task was in the store before its page opened: none of its item routes was asked.
    expect(refused).toEqual([]);
    expect(errors).toEqual([]);
    await context.close();
  });
});
