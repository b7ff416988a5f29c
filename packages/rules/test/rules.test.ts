import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { compileRule, RuleCompileError, RuleEvaluationError } from '../src/index.ts';

describe('rules in CEL', () => {
  it('compiles once and evaluates per record, with the functions an app adds', () => {
    const rule = compileRule('row.AGE > 100 || (has(row.ONSET) && isPartialDate(row.ONSET))', {
      id: 'DM01',
      functions: [{ signature: 'isPartialDate(string): bool', implementation: (s: string) => /^\d{4}(-\d{2})?$/.test(s) }],
    });
    expect(rule.variables).toEqual(['row']);
    expect(rule.test({ row: { AGE: 101.5 } })).toBe(true);
    expect(rule.test({ row: { AGE: 40, ONSET: '2014-03' } })).toBe(true);
    expect(rule.test({ row: { AGE: 40, ONSET: '2014-03-02' } })).toBe(false);
    expect(compileRule('size(codes) + 1', { id: 'n' }).evaluate({ codes: ['a', 'b'] })).toBe(3);
    // Names a macro binds are not variables.
    expect(compileRule('values.exists(v, v > limit)', { id: 'm', variables: ['values', 'limit'] }).test({ values: [1, 5], limit: 4 })).toBe(true);
  });

  it('refuses a rule that does not parse, or that reads an unknown variable, naming the rule and the position', () => {
    const attempt = (source: string, variables?: string[]) => {
      try {
        compileRule(source, { id: 'AE07', ...(variables ? { variables } : {}) });
      } catch (error) {
        return error as RuleCompileError;
      }
      throw new Error('compiled');
    };
    const syntax = attempt('row.AESTDTC >\n  && true');
    expect(syntax).toBeInstanceOf(RuleCompileError);
    expect(syntax.ruleId).toBe('AE07');
    expect(syntax.position).toMatchObject({ line: 2, column: 3 });
    expect(syntax.message).toMatch(/^rule AE07: .+ at line 2, column 3$/);
    const unknown = attempt('row.AGE > 1 && subject.ARM == "A"', ['row']);
    expect(unknown.message).toBe('rule AE07: unknown variable "subject" (known: row) at line 1, column 16');
    expect(attempt('   ').message).toBe('rule AE07: the condition is empty');
  });

  it('reports a failure on one record without throwing anything else', () => {
    const rule = compileRule('row.AGE > 1', { id: 'X' });
    expect(() => rule.test({ row: {} })).toThrow(RuleEvaluationError);
    expect(() => rule.test({ row: {} })).toThrow('rule X: No such key: AGE');
    expect(() => compileRule('1 + 2', { id: 'Y' }).test({})).toThrow('rule Y: the condition gave number, not a boolean');
  });

  it('runs where code cannot be generated from strings (no eval, no new Function)', () => {
    const script = `
      import { compileRule } from ${JSON.stringify(new URL('../src/index.ts', import.meta.url).href)};
      const rule = compileRule('rows.filter(r, r.v > 2).size() == 2 && "x" in tags', { id: 'strict' });
      console.log(rule.test({ rows: [{ v: 1 }, { v: 3 }, { v: 4 }], tags: ['x'] }));
      try { new Function('return 1'); console.log('generated'); } catch { console.log('refused'); }`;
    const run = spawnSync(process.execPath, ['--disallow-code-generation-from-strings', '--conditions=dev-source', '--no-warnings', '--input-type=module', '-e', script], {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      encoding: 'utf8',
    });
    expect(run.stderr).toBe('');
    expect(run.stdout.trim().split('\n')).toEqual(['true', 'refused']);
  });
});
