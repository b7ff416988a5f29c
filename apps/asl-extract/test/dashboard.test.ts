import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSampleLibrary } from '../src/library/sample.ts';
import { aslTest, type AslTest } from './harness.ts';

// Debian's chromium (installed by .ci/run), with a fresh profile per launch (playwright's default);
// screenshots go to .test-artifacts/ for a person to look at.
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const artifacts = fileURLToPath(new URL('../../../.test-artifacts/asl-dashboard', import.meta.url));

let t: AslTest;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`no browser at ${CHROMIUM}: install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH`);
  mkdirSync(artifacts, { recursive: true });
  t = await aslTest();
  await t.api();
  await t.workers(1);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});

afterAll(async () => {
  await browser?.close();
  await t?.[Symbol.asyncDispose]();
});

describe('dashboard in headless Chromium', () => {
  it('starts a batch, watches the bar reach 100%, shows a failure reason, retries the failed items', async () => {
    // Papers 20..27: paper 23 is corrupt.
    await createSampleLibrary(t.prisma, t.storage, 'team-a', 8, 20);
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const apiUrl = t.apiUrl!;
    await page.goto(`${apiUrl}/#token=token-a`);
    await page.getByText('paper-0023.pdf').waitFor();
    expect(page.url()).not.toContain('token'); // the token leaves the address bar at once
    await page.screenshot({ path: join(artifacts, '1-library.png') });

    await page.getByRole('button', { name: 'Select all' }).click();
    await page.getByRole('button', { name: 'Start batch (8)' }).click();
    const task = page.locator('.task').first();
    await task.locator('.pct', { hasText: '100%' }).waitFor({ timeout: 60_000 });
    await task.locator('.status', { hasText: 'completed' }).waitFor();
    await expect.poll(() => task.locator('.meta').innerText()).toContain('ok 7');
    const failure = task.locator('.failures li');
    await failure.first().waitFor();
    expect(await failure.first().innerText()).toMatch(/paper-0023\.pdf: corrupt_pdf not a readable PDF/);
    await page.screenshot({ path: join(artifacts, '2-completed.png') });

    await task.getByRole('button', { name: 'Retry failed' }).click();
    await task.locator('.counts', { hasText: 'round 2' }).waitFor({ timeout: 30_000 });
    await task.locator('.status', { hasText: 'completed' }).waitFor({ timeout: 30_000 });
    await expect.poll(() => task.locator('.counts').innerText()).toBe('8 / 8 · round 2');
    // The corrupt paper fails again in round 2, and says why.
    await expect.poll(() => task.locator('.failures li').allInnerTexts()).toEqual([expect.stringMatching(/paper-0023\.pdf: corrupt_pdf/)]);
    await page.screenshot({ path: join(artifacts, '3-retried.png') });

    // The export is a real download of the finished task's results.
    const download = page.waitForEvent('download');
    await task.getByRole('button', { name: 'CSV' }).click();
    const file = await download;
    expect(file.suggestedFilename()).toMatch(/^asl-.*\.csv$/);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('shows a task started elsewhere with its live progress', async () => {
    const ids = await createSampleLibrary(t.prisma, t.storage, 'team-a', 30, 200);
    const page = await browser.newPage();
    await page.goto(`${t.apiUrl}/#token=token-a`);
    await page.locator('#tasks .task').first().waitFor();
    const res = await t.call('POST', '/tasks', { body: { input: { documentIds: ids } } });
    const { id } = (await res.json()) as { id: string };
    // No reload: the page picks the new task up and streams it.
    const row = page.locator(`#task-${id}`);
    await row.locator('.pct', { hasText: '100%' }).waitFor({ timeout: 60_000 });
    await page.screenshot({ path: join(artifacts, '4-second-task.png') });
    await page.close();
  });
});
