// A fresh process runs its JavaScript cold (interpreted, then compiled as it gets hot): a new
// worker's first chunks took five times as long as the later ones, and at 20 chunks a load
// that is a fifth of its time. A worker therefore parses a small spec and cleans a sample of
// rows through both of the encoder's paths once, when it starts.
//
// The sample takes the branches real files take (signed and unsigned numbers, null tokens,
// booleans as digits and words, escapes, CRLF, non-ASCII text, worksheet line numbers): the
// compiled code only holds the branches it has seen run, and a branch first taken during a
// load threw the optimised encoder away and compiled it again (a worker's first chunk of the
// COVID file took five times as long as the next, because the warm-up had no negative number).
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
  - { name: lag, type: number }
  - { name: code, type: text, required: true }
rules:
  - { id: score_max, reject: score > 90 }
  - { id: lag_min, reject: lag < -50 }
`;
const HEADER = ['id', 'name', 'kind', 'day', 'score', 'flag', 'seen', 'note', 'lag', 'code'];
const KINDS = ['alpha', 'beta', 'gamma', 'NA', 'delta', 'Alpha'];
const FLAGS = ['0', '1', 'true', 'false', 'NA', 'Yes', 'maybe'];
const LAGS = ['1.5', '-2.3', '+4', '.5', '0', '-0.0', '12', '-7', 'NA', '1e3', '-60.5', '3.25'];
const DAYS = ['3', '-2', '+5', '17', 'NA', '0', 'x'];

interface Variant {
  /** Non-ASCII text in some names (the chunk is then checked field by field). */
  nonAscii?: boolean;
  crlf?: boolean;
  /** Each record led by its line number, as a prepared worksheet is. */
  lineField?: boolean;
}

/** Sample rows: mostly clean, some with a null, a reject, a quote, an escape or a value the fast path leaves to the reference one. */
function sample(rows: number, variant: Variant = {}): Buffer {
  const lines: string[] = [];
  for (let i = 1; i <= rows; i++) {
    const note = i % 97 === 0 ? '"with, comma"' : i % 13 === 0 ? '' : i % 53 === 0 ? 'back\\slash\tand tab' : i % 31 === 0 ? `a long note that goes on past sixty-four bytes of plain text ${i}` : `note ${i % 7}`;
    const name = variant.nonAscii && i % 5 === 0 ? `Zoë ${i % 11}` : i % 19 === 0 ? ` name${i % 11} ` : `name${i % 11}`;
    const fields = [
      i,
      name,
      KINDS[i % KINDS.length],
      DAYS[i % DAYS.length],
      i % 41 === 0 ? '95.5' : i % 23 === 0 ? '-3.5' : `${i % 89}.${i % 10}`,
      FLAGS[i % FLAGS.length],
      i % 17 === 0 ? 'NA' : `2024-01-${String((i % 28) + 1).padStart(2, '0')}`,
      note,
      LAGS[i % LAGS.length],
      i % 211 === 0 ? 'NA' : `c${i % 3}`,
    ];
    if (variant.lineField) fields.unshift(i + 1);
    lines.push(i % 101 === 0 ? ',,,' : fields.join(','));
  }
  const end = variant.crlf ? '\r\n' : '\n';
  return Buffer.from(`${lines.join(end)}${end}`);
}

/** Cleans and encodes the samples a few times (about 150 ms, and the compiler's threads about as much again); nothing is kept. */
export function warmUp(): void {
  const compiled = compileSpec(parseSpec(SPEC));
  const samples: [Buffer, Variant][] = [
    [sample(1_500), {}],
    [sample(500, { nonAscii: true }), { nonAscii: true }],
    [sample(500, { crlf: true }), { crlf: true }],
    [sample(500, { lineField: true }), { lineField: true }],
  ];
  // The manager's scan too.
  const scanner = new RecordScanner(',', '"');
  for (let round = 0; round < 4; round++) scanner.push(samples[0]![0], () => {});
  for (let round = 0; round < 3; round++) {
    for (const [bytes, variant] of samples) {
      chunkText(bytes, { compiled, header: HEADER, loadId: '00000000-0000-4000-8000-000000000000', chunkNo: 1, firstLine: 2, lineField: variant.lineField ?? false, delimiter: ',', quote: '"' });
    }
  }
}
