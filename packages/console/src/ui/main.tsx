import { render } from 'preact';
import { CONFIG_ELEMENT_ID, type ResolvedConsoleConfig } from '../config.ts';
import { Root } from './views/Root.tsx';

function readConfig(): ResolvedConsoleConfig | null {
  const element = document.getElementById(CONFIG_ELEMENT_ID);
  if (!element?.textContent) return null;
  try {
    return JSON.parse(element.textContent) as ResolvedConsoleConfig;
  } catch {
    return null;
  }
}

const app = document.getElementById('app')!;
const config = readConfig();
if (config) {
  app.replaceChildren();
  render(<Root config={config} />, app);
} else {
  const p = document.createElement('p');
  p.className = 'boot';
  p.textContent = 'The console configuration is missing from this page.';
  app.replaceChildren(p);
}
