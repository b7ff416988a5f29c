import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { artifactsDir, launchBrowser, seriousViolations, signIn, type Browser, type Page, type PageElement } from '@fanout/browser-testing';
import { TEST_TOKEN } from '@fanout/kit/testing';
import { waitFor } from '@fanout/testdb';
import ExcelJS from 'exceljs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATA, qcTest, type QcTest } from './harness.ts';

// The QC console in Debian's Chromium against real API and worker processes: a run started from
// the console's panel, two dozen more from the API while the list is shown, the run's panels
// (rules, sites, subject by rule, findings with their actions, a subject's records, changes since
// the last run), the report downloaded, and the Queries page. Screenshots: .test-artifacts/iit-console/.
const shots = artifactsDir('iit-console');
const PROJECT = join(DATA, 'redcap', 'clinical-trial-1');
const RULES = `name: REDCap data quality
generate:
  - from: redcap
    checks: [A, B, C, D, E, G]
`;
const MORE_RUNS = 24;

let t: QcTest;
let browser: Browser;
let studyId: string;
let ruleSetId: string;

beforeAll(async () => {
  t = await qcTest();
  await t.api();
  await t.workers(2);
  studyId = await t.study('clinical-trial-1', 'redcap');
  expect((await t.upload(studyId, 'dictionary.csv', readFileSync(join(PROJECT, 'dictionary.csv')), { kind: 'dictionary' })).status).toBe(201);
  expect((await t.upload(studyId, 'data.csv', readFileSync(join(PROJECT, 'data.csv')), { kind: 'records' })).status).toBe(201);
  ruleSetId = await t.ruleSet(studyId, RULES);
  // A second study with its own rule set: the panel offers each study's rule sets only.
  const second = await t.study('second project', 'redcap');
  expect((await t.upload(second, 'dictionary.csv', readFileSync(join(PROJECT, 'dictionary.csv')), { kind: 'dictionary' })).status).toBe(201);
  await t.ruleSet(second, 'name: Second project checks\ngenerate:\n  - from: redcap\n    checks: [A]\n');
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await t?.[Symbol.asyncDispose]();
});

async function signedIn(page: Page, errors: string[]) {
  page.setDefaultTimeout(20_000);
  await signIn(page, t.apiUrl!, TEST_TOKEN.a, errors);
}

async function accessible(page: Page, view: string, shot: string) {
  await page.screenshot({ path: join(shots, shot), fullPage: true });
  expect(await seriousViolations(page), `axe on ${view}`).toEqual([]);
}

const rowsOf = (page: Page, panel: string) => page.getByRole('region', { name: `${panel}, table` }).locator('tbody tr');
const cellsOf = async (page: Page, panel: string) => (await rowsOf(page, panel).evaluateAll((rows: PageElement[]) => rows.map((r) => Array.from(r.querySelectorAll('td'), (td) => td.textContent ?? '')))) as string[][];
type TaskJson = { id: string; status: string; total: number; succeeded: number; failed: number; cancelled: number };
const apiTasks = async () => ((await (await t.call('GET', '/tasks?limit=200')).json()) as { tasks: TaskJson[] }).tasks;

describe('the QC console in Chromium', () => {
  it('starts a run from its panel and keeps up with two dozen more; shows a run in its panels, acts on findings, downloads the report, and lists queries by age', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    const page = await context.newPage();
    const errors: string[] = [];
    try {
      await useTheConsole(page, errors);
    } catch (error) {
      await page.screenshot({ path: join(shots, 'failure.png'), fullPage: true });
      throw error;
    }
    expect(errors).toEqual([]);
    await context.close();
    // Another tenant sees none of it.
    expect(await (await t.call('GET', '/studies', { token: TEST_TOKEN.b })).json()).toEqual({ studies: [] });
    expect(await (await t.call('GET', '/queries', { token: TEST_TOKEN.b })).json()).toMatchObject({ queries: [] });
  }, 420_000);
});

/** Everything the test does in the page; the caller keeps a screenshot of a failure. */
async function useTheConsole(page: Page, errors: string[]) {
  await signedIn(page, errors);

  // A run from the panel: the study and the rule set are picked from the app's own lists, the
  // rule sets offered being the chosen study's (a choice of another study's is cleared).
  const study = page.getByLabel(/^Study/);
  const ruleSet = page.getByLabel(/^Rule set/);
  const offered = () => ruleSet.locator('option').allInnerTexts();
  expect(await offered()).toEqual(['First choose: Study']);
  await study.selectOption({ label: 'second project (redcap)' });
  await waitFor(async () => (await offered()).length === 2, { message: "the second study's rule sets offered" });
  expect((await offered())[1]).toMatch(/^Second project checks v1 \(\d+\)$/);
  await ruleSet.selectOption({ index: 1 });
  await study.selectOption({ label: 'clinical-trial-1 (redcap)' });
  await waitFor(async () => (await offered()).some((o) => o.startsWith('REDCap data quality v1')) && (await ruleSet.inputValue()) === '', { message: "the first study's rule sets offered, the other study's choice cleared" });
  expect((await offered()).filter((o) => o.startsWith('Second project'))).toEqual([]);
  await ruleSet.selectOption({ label: await ruleSet.locator('option', { hasText: 'REDCap data quality v1' }).innerText() });
  await page.getByRole('button', { name: 'Start run' }).click();
  await page.getByText(/^Started task /).waitFor();
  await waitFor(async () => (await apiTasks()).length === 1, { message: 'the run started from the console' });
  const [uiRun] = await apiTasks();

  // Two dozen more from the API at once: the list picks them up live and ends agreeing with the API.
  await page.goto(`${t.apiUrl}/#/`);
  await Promise.all(Array.from({ length: MORE_RUNS }, () => t.run(studyId, ruleSetId)));
  await page.locator('li.task-row').nth(MORE_RUNS).waitFor();
  await accessible(page, 'the list with two dozen runs', '1-list-running.png');
  await waitFor(async () => (await apiTasks()).every((x) => x.status === 'completed'), { timeoutMs: 240_000, intervalMs: 500, message: `${MORE_RUNS + 1} runs completed` });
  const final = await apiTasks();
  expect(final.map((x) => [x.total, x.succeeded])).toEqual(final.map(() => [500, 500]));
  await waitFor(
    async () => {
      const shown = await page.locator('li.task-row').evaluateAll((rows: PageElement[]) =>
        rows.map((row) => ({ now: Number(row.querySelector('[role="progressbar"]')?.getAttribute('aria-valuenow')), status: row.querySelector('[data-status]')?.getAttribute('data-status') })),
      );
      return shown.length === MORE_RUNS + 1 && shown.every((s) => s.now === 500 && s.status === 'completed');
    },
    { timeoutMs: 20_000, intervalMs: 100, message: 'every run on the page completed with 500 of 500' },
  );
  await accessible(page, 'the list, every run finished', '2-list-finished.png');
  // Ids submitted in the same second start alike (UUIDv7): the page still tells every run apart.
  expect(new Set(await page.locator('li.task-row .mono').allInnerTexts()).size).toBe(MORE_RUNS + 1);

  // The run's page: its panels agree with the API.
  await t.waitRun(uiRun!.id);
  await page.goto(`${t.apiUrl}/#/tasks/${uiRun!.id}`);
  const apiRules = (await t.json('GET', `/runs/${uiRun!.id}/rules`)).rules as { ruleId: string; status: string; issues: number }[];
  const outlier = apiRules.find((r) => r.ruleId === 'REDCAP-E-demographics')!;
  expect(outlier.status).toBe('issues');
  await waitFor(async () => (await rowsOf(page, 'Rules').count()) === apiRules.length, { message: 'every rule in the Rules panel' });
  const shownRules = await cellsOf(page, 'Rules');
  expect(shownRules.map((r) => [r[0], r[1]])).toEqual(apiRules.map((r) => [r.ruleId, r.status]));
  expect(shownRules.find((r) => r[0] === outlier.ruleId)![2]).toBe(outlier.issues.toLocaleString('en-US'));
  // Filtered to the rules that found issues.
  await page.getByRole('group', { name: 'Filters of Rules' }).getByLabel('Status').selectOption('issues');
  await waitFor(async () => (await rowsOf(page, 'Rules').count()) === apiRules.filter((r) => r.status === 'issues').length, { message: 'the Rules panel filtered' });
  const sites = (await t.json('GET', `/runs/${uiRun!.id}/sites`)).sites as { site: string; issues: number }[];
  expect((await cellsOf(page, 'Issues by site')).map((r) => [r[0], r[1]])).toEqual(sites.map((s) => [s.site, s.issues.toLocaleString('en-US')]));
  await rowsOf(page, 'Subject by rule').first().waitFor();
  await rowsOf(page, 'Findings').first().waitFor();
  // The records panel waits for a subject rather than asking for every record of the study.
  await page.getByText('Type a subject (USUBJID or record id) to see their records.').waitFor();
  await accessible(page, "a run's page", '3-run.png');

  // Drill-down: a finding's subject, their cells and their records.
  const [finding] = (await t.json('GET', `/runs/${uiRun!.id}/findings?rule=${outlier.ruleId}&limit=2`)).findings as { key: string; subject: string; ruleId: string; dataset: string; recno: number }[];
  const findingFilters = page.getByRole('group', { name: 'Filters of Findings' });
  await findingFilters.getByLabel('Subject').fill(finding!.subject);
  await findingFilters.getByLabel('Subject').press('Enter');
  const cellFilters = page.getByRole('group', { name: 'Filters of Subject by rule' });
  // (Applied as typed, without Enter.)
  await cellFilters.getByLabel('Subject').fill(finding!.subject);
  const recordFilters = page.getByRole('group', { name: /^Filters of A subject's records/ });
  await recordFilters.getByLabel('Subject').fill(finding!.subject);
  await recordFilters.getByLabel('Subject').press('Enter');
  const cells = (await t.json('GET', `/runs/${uiRun!.id}/subject-rules?subject=${finding!.subject}`)).cells as unknown[];
  await waitFor(async () => (await rowsOf(page, 'Subject by rule').count()) === cells.length, { message: "the subject's cells" });
  const records = page.getByRole('region', { name: /^A subject's records.*, table$/ });
  await records.locator('tbody tr').first().waitFor();
  expect(await records.locator('tbody tr').count()).toBe(1);
  expect(await records.locator('tbody tr').innerText()).toContain(`"record_id": "${finding!.subject}"`);
  // A REDCap form names the dataset (lower case, longer than an SDTM domain's name).
  await recordFilters.getByLabel('Dataset').fill('demographics');
  await recordFilters.getByLabel('Dataset').press('Enter');
  await records.getByText('demographics', { exact: true }).waitFor();
  expect(await records.locator('tbody tr').count()).toBe(1);

  // A query opened on the finding, from its row; then an exclusion, confirmed and with a reason.
  const name = `${finding!.subject} ${finding!.ruleId} ${finding!.dataset} ${finding!.recno}`;
  await page.getByRole('button', { name: `Open query: ${name}` }).click();
  await page.getByRole('dialog').getByLabel('Query text').fill('Please confirm this value against the source.');
  await page.getByRole('dialog').getByRole('button', { name: 'Open query' }).click();
  await page.getByText('Open query: done.').waitFor();
  await page.getByRole('button', { name: `Exclude: ${name}` }).click();
  await page.getByRole('dialog').getByLabel('Reason for the exclusion').fill('confirmed with the site');
  await page.getByRole('dialog').getByRole('button', { name: 'Exclude' }).click();
  await page.getByText('Exclude: done.').waitFor();
  await accessible(page, "a subject's findings, records and actions", '4-drill-down.png');
  const [discrepancy] = (await t.json('GET', `/studies/${studyId}/discrepancies?rule=${outlier.ruleId}&subject=${finding!.subject}&status=excluded`)).discrepancies as { key: string; exclusionReason: string }[];
  expect(discrepancy).toMatchObject({ key: finding!.key, exclusionReason: 'confirmed with the site' });

  // The report, downloaded from the run's page: the workbook of four sheets.
  const download = page.waitForEvent('download');
  await page.getByRole('button', { name: 'Export report (.xlsx)' }).click();
  const file = await (await download).path();
  const wb = new ExcelJS.Workbook();
  await wb.xlsx.readFile(file);
  expect(wb.worksheets.map((w) => w.name)).toEqual(['Dataset Summary', 'Issue Summary', 'Details', 'Rules']);

  // A run after the exclusion: the changes since the last run, as the API counts them.
  const next = await t.run(studyId, ruleSetId);
  await t.waitRun(next);
  await page.goto(`${t.apiUrl}/#/tasks/${next}`);
  const changes = (await t.json('GET', `/runs/${next}/changes`)).changes as { ruleId: string; new: number; open: number; resolved: number }[];
  expect(changes.find((c) => c.ruleId === outlier.ruleId)).toEqual({ ruleId: outlier.ruleId, new: 0, open: outlier.issues - 1, resolved: 0 });
  await waitFor(async () => (await rowsOf(page, 'New and resolved since the last run').count()) === changes.length, { message: 'the changes panel' });
  expect(await cellsOf(page, 'New and resolved since the last run')).toEqual(changes.map((c) => [c.ruleId, String(c.new), c.open.toLocaleString('en-US'), String(c.resolved)]));
  await accessible(page, 'the changes since the last run', '5-changes.png');

  // The Queries page: oldest first with their age; answered from its row.
  await page.getByRole('link', { name: 'Queries' }).click();
  await page.getByRole('heading', { name: 'Queries', exact: true }).waitFor();
  const queries = page.getByRole('region', { name: 'Queries, oldest first, table' });
  await queries.getByText('OPEN', { exact: true }).waitFor();
  await queries.getByRole('button', { name: `Answer: ${finding!.subject} ${finding!.ruleId} OPEN` }).click();
  await page.getByRole('dialog').getByLabel('Answer').fill('Confirmed on the source document.');
  await page.getByRole('dialog').getByRole('button', { name: 'Answer' }).click();
  await queries.getByText('ANSWERED', { exact: true }).waitFor();
  await accessible(page, 'the Queries page', '6-queries.png');
  const [query] = (await t.json('GET', '/queries')).queries as { status: string; ageDays: number; history: unknown[] }[];
  expect(query).toMatchObject({ status: 'ANSWERED', ageDays: 0 });
}
