import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { csvRecordsAt, readSdtmCsv } from '../src/data/csv.ts';
import { readRedcapDictionary } from '../src/data/redcap.ts';

const dir = mkdtempSync(join(tmpdir(), 'csv-lines-'));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the lines a CSV error names', () => {
  it('are the lines a record starts on in the file, whatever quoted line breaks, CRLF or empty lines come before it', async () => {
    for (const nl of ['\n', '\r\n']) {
      const path = file(`lines${nl.length}.csv`, ['A,B', '1,"x', 'y"', '', '2,z', '3,"p', 'q', 'r"', '4,w'].join(nl));
      const lines = [];
      for await (const r of csvRecordsAt(path)) lines.push([r.fields[0], r.line]);
      expect(lines, JSON.stringify(nl)).toEqual([['A', 1], ['1', 2], ['2', 5], ['3', 6], ['4', 9]]);
    }
  });

  it('in an SDTM dataset and a REDCap dictionary, an error names the line to open', async () => {
    const dm = file('dm.csv', ['USUBJID,NOTE,AGE', 'S-1,"a', 'b",61', '', 'S-2,c,sixty'].join('\r\n'));
    const table = await readSdtmCsv(dm, { types: new Map([['AGE', 'num']]), requireSubject: true });
    await expect(async () => {
      for await (const _ of table.rows()) void _;
    }).rejects.toThrow(/^line 5: AGE is numeric, "sixty" is not a number$/);
    const header = 'Variable / Field Name,Form Name,Section Header,Field Type,Field Label,"Choices, Calculations, OR Slider Labels",Field Note,Text Validation Type OR Show Slider Number,Text Validation Min,Text Validation Max,Identifier?,Branching Logic (Show field only if...),Required Field?,Custom Alignment,Question Number (surveys only),Matrix Group Name,Matrix Ranking?,Field Annotation';
    const dictionary = file('dictionary.csv', [header, 'record_id,enrolment,,text,Record ID,,,,,,,,,,,,,', 'sex,enrolment,,radio,Sex,"1, Female', '2, Male",,,,,,,,,,,,', 'Age,enrolment,,text,Age,,,,,,,,,,,,,'].join('\n'));
    await expect(readRedcapDictionary(dictionary)).rejects.toThrow(/^line 5: "Age" is not a REDCap variable name$/);
  });
});
