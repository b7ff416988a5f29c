import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { calcDiffers, compareDates, isIsoDate, isPartialDate, roundTo } from '../src/rules/functions.ts';
import { translateCalculation } from '../src/rules/redcap-calc.ts';
import { parseRuleSet, RuleSetError } from '../src/rules/rule-set.ts';

describe('rule functions', () => {
  it('reads ISO 8601 dates, partial ones included, and compares them only as far as both go', () => {
    expect(['2014', '2014-03', '2014-03-02', '2014-03-02T11:45', '2014---02'].map(isIsoDate)).toEqual([true, true, true, true, true]);
    expect(['2014-13', '2014-02-30', '14-03-02', '2014/03/02', ''].map(isIsoDate)).toEqual([false, false, false, false, false]);
    // Dashes stand for unknown parts between known ones; a value of dashes alone, or ending in one, says nothing.
    expect(['-', '--', '2014--', '2014-03-', '2014-03-02T-'].map(isIsoDate)).toEqual([false, false, false, false, false]);
    expect(['2014', '2014-03', '2014-03-02'].map(isPartialDate)).toEqual([true, true, false]);
    expect(compareDates('2014-02', '2014-03-05')).toBe(-1);
    expect(compareDates('2014-03', '2014-03-05')).toBeNull();
    expect(compareDates('2014-03-06', '2014-03-05')).toBe(1);
    expect(compareDates('2014-03-05T10:00', '2014-03-05T09:00')).toBe(1);
    expect(compareDates('', '2014-03-05')).toBeNull();
  });

  it('translates REDCap calculations into CEL, and says why when it cannot', () => {
    expect(translateCalculation('round(([weight]*10000)/(([height])^(2)),1)')).toEqual({ cel: 'round((((num(row.weight) * 10000.0)) / (pow((num(row.height)), (2.0)))), 1.0)', fields: ['weight', 'height'] });
    expect(() => translateCalculation('if([a], 2, 3)')).toThrow('the function if() is not translated');
    expect(() => translateCalculation('[enrollment_arm_1][weight]')).toThrow('event-qualified');
    expect(roundTo(31.25, 1)).toBe(31.3);
    expect(roundTo(-31.25, 1)).toBe(-31.3);
    // Rule H: a calculation dividing by zero is blank, as REDCap leaves it.
    expect([calcDiffers('31.3', 31.3), calcDiffers('31.2', 31.3), calcDiffers('', 31.3), calcDiffers('', Infinity), calcDiffers('5', Infinity)]).toEqual([false, true, true, false, true]);
  });

  it('refuses every bad rule of a set at once, each with its id', () => {
    try {
      parseRuleSet('name: x\nrules:\n  - id: A1\n    scope: AE\n    level: record\n    severity: fatal\n    message: m\n    condition: "true"\n  - id: A2\n    scope: AE\n    level: study\n    severity: error\n    message: m\n    condition: "true"\n', { standard: 'sdtm', define: null, dictionary: null });
      throw new Error('accepted');
    } catch (error) {
      expect(error).toBeInstanceOf(RuleSetError);
      expect((error as RuleSetError).issues.map((i) => [i.field, i.message.split(':')[0]])).toEqual([
        ['body.rules.0.severity', 'rule A1'],
        ['body.rules.1.level', 'rule A2'],
      ]);
    }
  });
});

describe('rule evaluation without code generation', () => {
  it('compiles the shipped pilot rule set and evaluates a subject under --disallow-code-generation-from-strings', () => {
    const script = `
      import { readFileSync } from 'node:fs';
      import { parseRuleSet, compileSpec } from ${JSON.stringify(new URL('../src/rules/rule-set.ts', import.meta.url).href)};
      import { evaluateSubject } from ${JSON.stringify(new URL('../src/rules/engine.ts', import.meta.url).href)};
      import { readDefineXml } from ${JSON.stringify(new URL('../src/data/define-xml.ts', import.meta.url).href)};
      const define = await readDefineXml(${JSON.stringify(fileURLToPath(new URL('../data/cdiscpilot01-sdtm/define.xml', import.meta.url)))});
      const set = parseRuleSet(readFileSync(${JSON.stringify(fileURLToPath(new URL('../rules/cdiscpilot01.yaml', import.meta.url)))}, 'utf8'), { standard: 'sdtm', define, dictionary: null });
      const rules = set.rules.map(compileSpec).filter((r) => r.level !== 'study');
      const dm = { USUBJID: 'S1', ARMCD: 'Pbo', ACTARMCD: 'Xan_Lo', ARM: 'Placebo', RFSTDTC: '2014-03-10', AGE: 70, AGEU: 'YEARS', DOMAIN: 'DM', SEX: 'X' };
      const ae = { USUBJID: 'S1', DOMAIN: 'AE', AESEQ: 1, AETERM: 'HEADACHE', AEDECOD: 'HEADACHE', AESTDTC: '2014-03', AEENDTC: '', AESER: 'N' };
      const { findings, tallies } = evaluateSubject(rules, { subject: 'S1', site: '701', subjectRow: dm, records: [{ dataset: 'DM', domain: 'DM', recno: 1, row: dm }, { dataset: 'AE', domain: 'AE', recno: 1, row: ae }] }, { TA: [{ ARMCD: 'Pbo', ARM: 'Placebo' }], TV: [] });
      console.log(JSON.stringify({ rules: rules.length, found: [...new Set(findings.map((f) => f.ruleId))].sort(), errors: [...tallies.keys()] }));
      try { new Function('return 1'); console.log('generated'); } catch { console.log('refused'); }`;
    const run = spawnSync(process.execPath, ['--disallow-code-generation-from-strings', '--conditions=dev-source', '--no-warnings', '--input-type=module', '-e', script], {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      encoding: 'utf8',
    });
    expect(run.stderr).toBe('');
    const [result, codegen] = run.stdout.trim().split('\n');
    const parsed = JSON.parse(result!);
    expect(parsed.rules).toBeGreaterThan(60);
    // ACTARMCD differs, AE end missing, partial AE start, SEX not in its codelist, no LB baseline, no DS, no EX.
    expect(parsed.found).toEqual(expect.arrayContaining(['SD2236', 'SD0021', 'AE-PARTIAL-START', 'DEF-CL-DM', 'SD0006', 'SD0069', 'SD0070']));
    expect(parsed.found).not.toContain('AE-BEFORE-RFSTDTC');
    expect(codegen).toBe('refused');
  });
});
