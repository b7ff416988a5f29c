import { CONFIG_ELEMENT_ID, type ResolvedConsoleConfig } from '../config.ts';

/** The hashed file names of one UI build, as scripts/build-ui.ts writes them to `manifest.json`. */
export interface UiManifest {
  js: string;
  css: string;
  icon: string;
}

/** The policy of the shell: its own scripts, styles and API only; no inline script, no framing. */
export const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'";

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

/**
 * JSON that is safe inside a `<script>` element: `<`, `>` and `&` become \u escapes (still the
 * same JSON), so a value holding `</script>` or `<!--` cannot end the element; U+2028/2029 too.
 */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The HTML page served at `/`: the bundle, the stylesheet and the configuration, nothing inline that runs. */
export function renderShell(config: ResolvedConsoleConfig, manifest: UiManifest): string {
  const base = escapeHtml(config.assetsBase);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${escapeHtml(config.title)}</title>
<link rel="icon" type="image/svg+xml" href="${base}${escapeHtml(manifest.icon)}">
<link rel="stylesheet" href="${base}${escapeHtml(manifest.css)}">
<script type="module" src="${base}${escapeHtml(manifest.js)}"></script>
<script type="application/json" id="${CONFIG_ELEMENT_ID}">${jsonForScript(config)}</script>
</head>
<body>
<div id="app"><p class="boot">Loading ${escapeHtml(config.title)}…</p></div>
<noscript><p class="boot">This console needs JavaScript.</p></noscript>
</body>
</html>
`;
}
