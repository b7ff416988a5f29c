import { isUtf8 } from 'node:buffer';
import { readdirSync, readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { RowCleaner } from '../src/load/clean.ts';
import { chunkText } from '../src/load/chunk-text.ts';
import type { EncodeOptions } from '../src/load/encode.ts';
import { parseRecords } from '../src/source/csv.ts';
import { compileSpec, parseSpec, type CompiledSpec } from '../src/spec/compile.ts';
import { dataPath } from './harness.ts';

// The chunk encoder reads most records on a fast path (in place, no field strings) and the rest
// the reference way (the string parser and RowCleaner). Both must give the same rows: these
// tests encode files both ways and compare the COPY text, numbers by value (the fast path
// writes 0.80 as it found it, the reference as 0.8: PostgreSQL reads both as the same double).

/** COPY rows with numbers by value, so the two paths compare. */
function rowsOf(blocks: Buffer[], compiled: CompiledSpec): string[][] {
  const numeric = new Set(compiled.targetColumns.flatMap((c, i) => (c.type === 'integer' || c.type === 'number' ? [i + 2] : [])));
  const text = Buffer.concat(blocks).toString('utf8');
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => l.split('\t').map((v, i) => (numeric.has(i) && v !== '\\N' ? String(Number(v)) : v)));
}

function compare(bytes: Buffer, spec: string, options: Partial<EncodeOptions> & { header: string[] }) {
  const compiled = compileSpec(parseSpec(spec));
  const base: EncodeOptions = { compiled, loadId: '6f1c1c9e-0000-4000-8000-000000000001', chunkNo: 7, firstLine: 2, lineField: false, delimiter: ',', quote: '"', ...options };
  const fast = chunkText(bytes, base);
  const reference = chunkText(bytes, { ...base, fastPath: false });
  expect(fast.counts).toEqual(reference.counts);
  expect(fast.filled).toEqual(reference.filled);
  expect(Buffer.concat(fast.rejects).toString('utf8')).toBe(Buffer.concat(reference.rejects).toString('utf8'));
  expect(rowsOf(fast.stage, compiled)).toEqual(rowsOf(reference.stage, compiled));
  return { fast, reference };
}

/** A deterministic pseudo-random sequence (mulberry32). */
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Each column's values: the first group clean (or odd but accepted), the second wrong or odd.
const numbers = [['1', '+5', '-0', '0.0', '-0.0', '0.80', '.5', '5.', '+.5', '99.99', '-3', '00012.5000', '123456789012345', ' 7 ', 'NA', ''], ['1e5', '1E-400', '1e400', '.', '1.2.3', 'abc', '\u00a07', '7\u00a0', '123456789012345678', '0.1000000000000000055511151231257827', ' ', '100.5', '101', '1,5', '\u0663', '-', '+', '0x10', 'Infinity']];
const integers = [['1', '+5', '-0', '007', '900719925474099', ' 12 ', 'NA', ''], ['-99', '12.0', '9007199254740993', 'x', '+', '-', '1e3', '\u00a03']];
const texts = [['plain', ' padded ', 'b\\s', 'caf\u00e9', '\u00a0nbsp\u00a0', 'cr\rhere', 'NA', '', '\u{1F600}x', 'a"b', 'x,y'], ['bad', 'tab\there', 'toolongvalue']];
const codes = [['Alpha', 'ALPHA', 'alpha', 'beta', 'Beta', ' beta ', 'NA', ''], ['gamma', '\u0130x', 'i\u0307x', '\u212Aelvin']];
const exact = [['a', 'b', ''], ['A', 'c']];
const flags = [['true', 'TRUE', 'Yes', 'y', '1', '0', 'no', 'F', '', 'NA', ' t '], ['maybe', '\u00e9', 'tru']];
const dates = [['2024-02-29', '29.02.2024', '45000', 'NA', '', ' 2024-01-05 '], ['2023-02-29', '2024-13-01']];
const stamps = [['2024-01-05T10:00:00Z', '2024-01-05 10:00', ''], ['2024-01-05T25:00:00Z', 'x']];
const parts = [['114/72', 'NA', ''], ['120', '/']];
const units = [['in', 'cm', '[in_i]'], ['kg', 'furlong', '', 'NA']];
const years = [['2024', '1999', 'NA', ''], ['x']];
const months = [['1', '12', ''], ['13']];
const days = [['5', '31', ''], ['0']];
const spare = [['', 'x'], ['y']];

const wideSpec = (delimiter: string) =>
  JSON.stringify({
    version: 1,
    target: 'wide',
    source: { delimiter },
    nullTokens: ['', 'NA'],
    codelists: { code: { values: ['Alpha', 'beta', '\u0130x', 'Kelvin'], ignoreCase: true } },
    columns: [
      { name: 'id', type: 'integer', required: true },
      { name: 'name', type: 'text', maxLength: 8 },
      { name: 'code', type: 'text', codelist: 'code' },
      { name: 'code2', type: 'text', codelist: ['a', 'b'] },
      { name: 'n', type: 'number' },
      { name: 'nc', type: 'number', decimal: ',' },
      { name: 'flag', type: 'boolean' },
      { name: 'd', type: 'date', formats: ['iso', 'DD.MM.YYYY', 'excel'] },
      { name: 'ts', type: 'timestamp' },
      { name: 'part', type: 'text', split: { separator: '/', index: 1 } },
      { name: 'joined', source: ['y', 'm', 'dd'], type: 'date', formats: ['YYYY-M-D'] },
      { name: 'w', type: 'number', unit: { column: 'u', map: { in: '[in_i]' }, to: ['cm'], into: 'w_unit' } },
      { name: 'nt', type: 'integer', nullTokens: ['-99'] },
      { name: 'raw', type: 'text' },
    ],
    rules: [
      { id: 'n_max', reject: 'n > 100' },
      { id: 'flag_or_id', assert: 'flag == null || flag || id > 0' },
      { id: 'no_bad', reject: 'name == "bad"' },
      { id: 'w_max', reject: 'w > 500.0' },
      { id: 'nc_int', reject: 'nc == 1.5' },
    ],
  });
const wideHeader = ['id', 'name', 'code', 'code2', 'n', 'nc', 'flag', 'd', 'ts', 'part', 'y', 'm', 'dd', 'w', 'u', 'nt', 'raw', 'unused'];

/** A dirty file: every column drawn from values that are clean, odd, or wrong, with quoting, blank lines and bad field counts. */
function dirtyFile(seed: number, rows: number, delimiter: string): Buffer {
  const next = random(seed);
  const any = <T,>(list: readonly T[]) => list[Math.floor(next() * list.length)]!;
  const lines: string[] = [wideHeader.join(delimiter)];
  for (let r = 0; r < rows; r++) {
    const roll = next();
    if (roll < 0.01) lines.push('');
    else if (roll < 0.02) lines.push(` ${delimiter} ${delimiter}`);
    // Most rows have a wrong value here and there; some have many.
    const odd = next() < 0.7 ? 0.02 : 0.3;
    const pick = (groups: string[][]) => any(groups[next() < odd ? 1 : 0]!);
    let fields = [integers, texts, codes, exact, numbers, numbers, flags, dates, stamps, parts, years, months, days, numbers, units, integers, texts, spare]
      .map(pick).map((f) => (f.includes(delimiter) || f.includes('"') || f.includes('\n') || next() < 0.02 ? `"${f.replaceAll('"', '""')}"` : f));
    if (next() < 0.01) fields = fields.slice(1);
    if (next() < 0.01) fields.push('extra');
    if (next() < 0.005) fields[1] = `"multi\nline"`;
    lines.push(fields.join(delimiter));
  }
  return Buffer.from(lines.join(next() < 0.5 ? '\n' : '\r\n') + (seed % 2 ? '\n' : ''), 'utf8');
}

describe('the chunk encoder: fast path and reference path agree', () => {
  it('on the COVID extract with its spec', () => {
    const text = gunzipSync(readFileSync(dataPath('medicaldata/covid_testing_deid.csv.gz')));
    const nl = text.indexOf(10);
    const { fast } = compare(text.subarray(nl + 1), readFileSync(dataPath('specs/covid.yaml'), 'utf8'), { header: text.subarray(0, nl).toString().split(',') });
    expect(fast.counts).toEqual({ rowsIn: 15_524, clean: 15_518, rejected: 6, blank: 0 });
  });

  it('on every csv-spectrum file, as text', () => {
    const dir = dataPath('csv-spectrum/csvs');
    for (const name of readdirSync(dir)) {
      const bytes = readFileSync(`${dir}/${name}`);
      const nl = bytes.indexOf(10);
      const header = bytes.subarray(0, nl).toString().replace(/\r$/, '').split(',');
      const spec = JSON.stringify({ version: 1, target: 't', columns: header.map((h, i) => ({ name: `c${i}`, source: h, type: 'text' })) });
      compare(bytes.subarray(nl + 1), spec, { header });
    }
  });

  for (const [delimiter, label] of [
    [',', 'CSV'],
    ['\t', 'TSV'],
    [';', 'semicolons'],
  ] as const) {
    it(`on dirty ${label}: odd numbers, spaces, codelists, booleans, dates, units, rules, quotes and bad field counts`, () => {
      for (const seed of [1, 2, 3]) {
        const bytes = dirtyFile(seed, 3000, delimiter);
        const nl = bytes.indexOf(10);
        const body = bytes.subarray(nl + 1);
        const { fast } = compare(body, wideSpec(delimiter), { header: wideHeader, delimiter });
        // Enough of each path to mean something.
        expect(fast.counts.clean).toBeGreaterThan(150);
        expect(fast.counts.rejected).toBeGreaterThan(500);
      }
    });
  }

  it('on dirty CSV whose rules are all simple comparisons (tested without CEL on the fast path)', () => {
    const spec = JSON.parse(wideSpec(',')) as { rules: unknown[] };
    spec.rules = [
      { id: 'n_max', reject: 'n > 100' },
      { id: 'n_min', reject: ' n<-0.5 ' },
      { id: 'id_pos', assert: 'id >= 1' },
      { id: 'nt_max', assert: 'nt <= 900719925474099' },
      { id: 'w_max', reject: 'w > 500.0' },
      { id: 'nc_ge', assert: 'nc >= 0' },
    ];
    // Values at and around each limit, each in an otherwise clean row.
    const edges = { version: 1, target: 't', nullTokens: ['', 'NA'], columns: [{ name: 'id', type: 'integer', required: true }, { name: 'n', type: 'number' }, { name: 'k', type: 'integer' }], rules: spec.rules.slice(0, 3) };
    const rows = ['1,100,5', '2,100.5,5', '3,101,1', '4,-0.5,1', '5,-0.6,1', '6,NA,0', '7,1e2,1', '8,100.0000001,1', '9,,NA', '0,3,3', '10,-0,1', '11,+100,1'];
    const { fast } = compare(Buffer.from(rows.join('\n')), JSON.stringify(edges), { header: ['id', 'n', 'k'] });
    expect(fast.counts).toEqual({ rowsIn: 12, clean: 7, rejected: 5, blank: 0 });
    for (const seed of [4, 5]) {
      const bytes = dirtyFile(seed, 3000, ',');
      const { fast } = compare(bytes.subarray(bytes.indexOf(10) + 1), JSON.stringify(spec), { header: wideHeader });
      expect(fast.counts.clean).toBeGreaterThan(150);
      expect(fast.counts.rejected).toBeGreaterThan(500);
    }
  });

  // Both paths read the chunk's bytes with the same record scan; this reads the file the plain
  // way instead (decoded whole, the string parser, RowCleaner) and compares the clean rows.
  it('as the string parser and RowCleaner read it independently: bytes that are not UTF-8, a delimiter outside ASCII, CRLF', () => {
    const escape = (v: string) => v.replace(/[\\\t\n\r]/g, (ch) => (ch === '\\' ? '\\\\' : ch === '\t' ? '\\t' : ch === '\n' ? '\\n' : '\\r'));
    const allText = (delimiter: string) => JSON.stringify({ version: 1, target: 't', source: { delimiter }, nullTokens: ['NA'], columns: wideHeader.map((h) => ({ name: h, type: 'text' })) });
    for (const [seed, delimiter, spec] of [[11, ',', wideSpec(',')], [12, ',', allText(',')], [13, '\u00a7', wideSpec('\u00a7')], [14, '\u00a7', allText('\u00a7')]] as const) {
      let bytes = dirtyFile(seed, 3000, ',');
      bytes = bytes.subarray(bytes.indexOf(10) + 1);
      if (delimiter !== ',') bytes = Buffer.from(bytes.toString('utf8').replaceAll(',', delimiter));
      // Bytes no UTF-8 text has, here and there (never a line end, a quote or a delimiter).
      const next = random(seed);
      bytes = Buffer.from(bytes);
      for (let k = 0; k < 200; k++) {
        const at = Math.floor(next() * bytes.length);
        if (bytes[at]! > 0x22 && bytes[at]! !== 0x2c && bytes[at]! < 0x80) bytes[at] = [0xff, 0xc3, 0xe2, 0xed][k % 4]!;
      }
      const compiled = compileSpec(parseSpec(spec));
      const fast = chunkText(bytes, { compiled, header: wideHeader, loadId: '6f1c1c9e-0000-4000-8000-000000000001', chunkNo: 7, firstLine: 2, lineField: false, delimiter, quote: '"' });
      const cleaner = new RowCleaner(compiled, wideHeader);
      const expected: string[] = [];
      const counts = { rowsIn: 0, clean: 0, rejected: 0, blank: 0 };
      let line = 2;
      parseRecords(bytes.toString('utf8'), delimiter, '"', (record) => {
        const at = line;
        line += record.lines;
        counts.rowsIn++;
        if (record.fields.every((f) => f.trim() === '')) return void counts.blank++;
        const result = record.problem ? null : cleaner.clean(record.fields);
        if (!result?.values) return void counts.rejected++;
        counts.clean++;
        expected.push(['7', String(at), ...result.values.map((v) => (v === null ? '\\N' : typeof v === 'boolean' ? (v ? 't' : 'f') : escape(String(v))))].join('\t'));
      });
      expect(fast.counts).toEqual(counts);
      expect(counts.clean).toBeGreaterThan(150);
      // What PostgreSQL is sent is UTF-8 (it refuses anything else): a byte that is not came in as U+FFFD.
      expect(isUtf8(Buffer.concat(fast.stage))).toBe(true);
      expect(rowsOf(fast.stage, compiled)).toEqual(rowsOf([Buffer.from(expected.map((l) => `${l}\n`).join(''))], compiled));
    }
  });

  it('on a prepared worksheet (each record led by its row number)', () => {
    const lines = ['8,1,plain,Alpha,a,1.5,"2,5",yes,2024-01-05,2024-01-05T10:00:00Z,1/2,2024,1,5,10,in,3,x,', '9,NA,x,beta,b,1,1,no,,,,,,,,,,,', '12,2,"quoted ""x""",Alpha,a,.5,3,0,,,,,,,,,,,'];
    compare(Buffer.from(lines.join('\n')), wideSpec(','), { header: wideHeader, lineField: true });
  });
});
