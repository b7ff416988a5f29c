import fs from 'node:fs';
import path from 'node:path';
import { publishedPackages, ROOT } from './workspace.ts';

export interface Snippet {
  /** Which README: `main` or the package folder's name (`core`, `kit`). */
  readme: string;
  /** Position among that README's code blocks of the same language, from 1. */
  index: number;
  lang: string;
  code: string;
  /** The file the block names in its first line (`// src/main.ts`), if it names one. */
  file: string | null;
}

const FENCE = /^```(\w+)\n([\s\S]*?)^```$/gm;

/** The code blocks of a markdown text, in order. */
export function codeBlocks(markdown: string): Array<{ lang: string; code: string }> {
  return [...markdown.matchAll(FENCE)].map((m) => ({ lang: m[1]!, code: m[2]! }));
}

/** Every README a consumer reads: the repository's and each published package's. */
export function readmes(): Array<{ readme: string; file: string }> {
  return [
    { readme: 'main', file: path.join(ROOT, 'README.md') },
    ...publishedPackages().map((p) => ({ readme: path.basename(p.dir), file: path.join(p.dir, 'README.md') })),
  ];
}

/** The TypeScript and Prisma blocks of every README. */
export function snippets(): Snippet[] {
  const found: Snippet[] = [];
  for (const { readme, file } of readmes()) {
    const counts = new Map<string, number>();
    for (const { lang, code } of codeBlocks(fs.readFileSync(file, 'utf8'))) {
      const kind = lang === 'typescript' ? 'ts' : lang;
      if (kind !== 'ts' && kind !== 'prisma') continue;
      const index = (counts.get(kind) ?? 0) + 1;
      counts.set(kind, index);
      const named = /^\/\/ ([\w./-]+\.(?:ts|prisma))\b/.exec(code);
      found.push({ readme, index, lang: kind, code, file: named?.[1] ?? null });
    }
  }
  return found;
}

/** The one block a README marks as runnable: the main README's `// src/main.ts`. */
export function quickStart(): Snippet {
  const block = snippets().find((s) => s.readme === 'main' && s.file === 'src/main.ts');
  if (!block) throw new Error('README.md: the quick start (a ts block starting with `// src/main.ts`) is missing');
  return block;
}

/**
 * Writes the TypeScript blocks under `dir`: a block that names its file goes there
 * (`readme/<readme>/<file>`), the others to `readme/<readme>/src/snippet-<n>.ts`; each becomes a
 * module. A relative import of the generated Prisma client gets a stub re-exporting the real one.
 */
export function writeSnippets(dir: string, generatedClient: string): string[] {
  const written: string[] = [];
  for (const snippet of snippets().filter((s) => s.lang === 'ts')) {
    const file = path.join(dir, 'readme', snippet.readme, snippet.file ?? `src/snippet-${snippet.index}.ts`);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, `${snippet.code}\nexport {};\n`);
    written.push(file);
    for (const [, specifier] of snippet.code.matchAll(/from '(\.{1,2}\/[^']*generated\/prisma\/client\.ts)'/g)) {
      const stub = path.resolve(path.dirname(file), specifier!);
      if (fs.existsSync(stub)) continue;
      fs.mkdirSync(path.dirname(stub), { recursive: true });
      const target = path.relative(path.dirname(stub), generatedClient).split(path.sep).join('/');
      fs.writeFileSync(stub, `export * from '${target.startsWith('.') ? target : `./${target}`}';\n`);
    }
  }
  return written;
}
