import { describe, expect, it } from 'vitest';
import { csvCell, csvLine, csvLines } from '../src/export/csv.ts';

// What a spreadsheet makes of a cell decides these: a text that starts a formula must be shown as
// text (OWASP's CSV injection advice), and a number must stay a number.
describe('CSV cells', () => {
  it('prefix a text that would start a formula with a quote, spaces before it included', () => {
    for (const text of ['=HYPERLINK("http://x")', '+1+2', '-2+3', '@SUM(A1)', '\t=1', '\r=1', '\n=1', ' =cmd|calc', '  +1', '\u00a0@x']) {
      const cell = csvCell(text);
      expect(cell.startsWith(`"'`), JSON.stringify(text)).toBe(true);
      // Read back as RFC 4180 says: the quote, then the text unchanged.
      expect(cell.slice(1, -1).replaceAll('""', '"')).toBe(`'${text}`);
    }
  });

  it('leave other texts, numbers and booleans as they are', () => {
    expect(csvCell('plain')).toBe('plain');
    expect(csvCell('a = b')).toBe('a = b');
    expect(csvCell(' leading space')).toBe(' leading space');
    expect(csvCell('x-1')).toBe('x-1');
    expect(csvCell(-5)).toBe('-5');
    expect(csvCell(-0.25)).toBe('-0.25');
    expect(csvCell(12n)).toBe('12');
    expect(csvCell(false)).toBe('false');
    expect(csvCell(null)).toBe('');
    expect(csvCell(undefined)).toBe('');
  });

  it('quote commas, quotes and line ends, and write objects as JSON', () => {
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('two\nlines')).toBe('"two\nlines"');
    expect(csvCell({ code: 'x', n: -1 })).toBe('"{""code"":""x"",""n"":-1}"');
    expect(csvLine(['a', -1, '=1'])).toBe(`a,-1,"'=1"\r\n`);
  });

  it('stream a header and a line per row', async () => {
    const lines: string[] = [];
    for await (const line of csvLines([{ header: 'n', value: (r: number) => r }], [1, -2])) lines.push(line);
    expect(lines).toEqual(['n\r\n', '1\r\n', '-2\r\n']);
  });
});
