import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import AxeBuilder from '@axe-core/playwright';
import { chromium, type Browser, type Page } from 'playwright-core';

/** Debian's chromium (scripts/ensure-chromium.sh installs it), or CHROMIUM_PATH. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Headless Chromium with a fresh profile, and without the background networking that this
 * machine's closed network refuses (it would also slow every start).
 */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`no browser at ${CHROMIUM}: install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH`);
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** Where a test's screenshots go: `.test-artifacts/<name>/` at the repository root (kept by CI). */
export function artifactsDir(name: string): string {
  const dir = join(fileURLToPath(new URL('../../../.test-artifacts', import.meta.url)), name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

export interface AxeViolation {
  id: string;
  impact: string | null | undefined;
  help: string;
  targets: string[];
}

/**
 * axe-core's serious and critical violations on the page as it is now (WCAG 2.1 A and AA rules).
 * Run in the page itself (axe's legacy mode): the default runs each frame apart and then opens a
 * blank page to merge their results, which took twice as long here, and our pages have no frames.
 */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  const results = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']).setLegacyMode(true).analyze();
  return results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(' ')) }));
}

/**
 * Bytes a page load moved over the wire for its own origin's documents, scripts and styles
 * (compressed sizes, from the Resource Timing API), measured after the first screen is shown.
 */
export async function firstScreenBytes(page: Page): Promise<number> {
  // Runs in the page (a string: this package is compiled without the DOM's types).
  return page.evaluate(`(() => {
    const entries = [...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')];
    return entries
      .filter((e) => e.name.startsWith(location.origin) && (e.entryType === 'navigation' || ['script', 'link', 'css'].includes(e.initiatorType)))
      .reduce((n, e) => n + (e.transferSize || e.encodedBodySize), 0);
  })()`);
}

/**
 * Signs `page` in to the console served at `baseUrl` with `token` (the token in the address's
 * fragment, as the console prints it) and waits for the task list. Returns the page's script errors
 * as they come (pushed into `errors` when given): a test expects none.
 */
export async function signIn(page: Page, baseUrl: string, token: string, errors: string[] = []): Promise<string[]> {
  page.on('pageerror', (e: Error) => errors.push(e.message));
  await page.goto(`${baseUrl}/#token=${token}`);
  await page.getByRole('heading', { name: 'Tasks' }).waitFor();
  return errors;
}

export type { Browser, BrowserContext, Page } from 'playwright-core';

/** What a test reads of an element in the page (the test files are compiled without the DOM's types). */
export interface PageElement {
  getAttribute(name: string): string | null;
  querySelector(selector: string): PageElement | null;
  querySelectorAll(selector: string): ArrayLike<PageElement>;
  readonly textContent: string | null;
}
