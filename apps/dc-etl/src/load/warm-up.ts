// A fresh process runs its JavaScript cold (interpreted, then compiled as it gets hot): a new
// worker's first chunks took five times as long as the later ones, and at 20 chunks a load
// that is a fifth of its time. A worker therefore parses a small spec and cleans a sample of
// rows through both of the encoder's paths once, when it starts.
import { RecordScanner } from '../source/csv.ts';
import { compileSpec, parseSpec } from '../spec/compile.ts';
import { chunkText } from './chunk-text.ts';

const SPEC = `
version: 1
target: warm_up
nullTokens: ['', NA]
codelists:
  kind: { values: [alpha, beta, gamma] }
columns:
  - { name: id, type: integer, required: true }
  - { name: name, type: text }
  - { name: kind, type: text, codelist: kind }
  - { name: day, type: integer }
  - { name: score, type: number }
  - { name: flag, type: boolean }
  - { name: seen, type: date, formats: [iso] }
  - { name: note, type: text }
rules:
  - { id: score_max, reject: score > 90 }
`;
const HEADER = ['id', 'name', 'kind', 'day', 'score', 'flag', 'seen', 'note'];
const KINDS = ['alpha', 'beta', 'gamma', 'NA', 'delta'];

/** Sample rows: mostly clean, some with a null, a reject, a quote or a value the fast path leaves to the reference one. */
function sample(rows: number): Buffer {
  const lines: string[] = [];
  for (let i = 1; i <= rows; i++) {
    const note = i % 97 === 0 ? '"with, comma"' : i % 13 === 0 ? '' : `note ${i % 7}`;
    lines.push([i, `name${i % 11}`, KINDS[i % KINDS.length], i % 30, i % 41 === 0 ? '95.5' : `${i % 89}.${i % 10}`, i % 2, i % 17 === 0 ? 'NA' : `2024-01-${String((i % 28) + 1).padStart(2, '0')}`, note].join(','));
  }
  return Buffer.from(`${lines.join('\n')}\n`);
}

/** Cleans and encodes the sample a few times (about 50 ms of CPU); nothing is kept. */
export function warmUp(): void {
  const compiled = compileSpec(parseSpec(SPEC));
  const bytes = sample(2_000);
  // The manager's scan too.
  const scanner = new RecordScanner(',', '"');
  for (let round = 0; round < 4; round++) scanner.push(bytes, () => {});
  for (let round = 0; round < 4; round++) {
    chunkText(bytes, { compiled, header: HEADER, loadId: '00000000-0000-4000-8000-000000000000', chunkNo: 1, firstLine: 2, lineField: false, delimiter: ',', quote: '"' });
  }
}
