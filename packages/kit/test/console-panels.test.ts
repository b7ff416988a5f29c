import { join } from 'node:path';
import { artifactsDir, launchBrowser, seriousViolations, type Browser } from '@fanout/browser-testing';
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

describe("an app's panels in the console", () => {
  it('shows a table of the app on the task page, runs its row action with a prompt, its task button, and its own page', async () => {
    const { id } = (await (await t.call('POST', '/tasks', { body: { input: { count: 5 } } })).json()) as { id: string };
    await waitFor(async () => ((await (await t.call('GET', `/tasks/${id}`)).json()) as { status: string }).status === 'completed', { message: 'the task' });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e: Error) => errors.push(e.message));
    await page.goto(`${t.apiUrl}/#token=${TEST_TOKEN.a}`);
    await page.getByRole('heading', { name: 'Tasks' }).waitFor();
    await page.goto(`${t.apiUrl}/#/tasks/${id}`);
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
});
