import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, seriousViolations, type Browser } from './index.ts';

// The accessibility check every console test relies on finds what it is there to find.
describe('seriousViolations', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('names the serious and critical violations of a page, and none on a clean one', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const head = '<!doctype html><html lang="en"><head><title>A page</title></head>';
    await page.setContent(`${head}<body><main><h1>Papers</h1><button></button><img src="a.png"><p style="color:#777;background:#888">faint</p></main></body></html>`);
    const found = await seriousViolations(page);
    expect(found.map((v) => [v.id, v.targets])).toEqual([
      ['button-name', ['button']],
      ['color-contrast', ['p']],
      ['image-alt', ['img']],
    ]);
    await page.setContent(`${head}<body><main><h1>Papers</h1><button>Start</button><img src="a.png" alt="A chart"><p>plain</p></main></body></html>`);
    expect(await seriousViolations(page)).toEqual([]);
    await context.close();
  });
});
