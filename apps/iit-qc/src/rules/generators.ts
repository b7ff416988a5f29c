import type { DefineMetadata } from '../data/define-xml.ts';
import type { RedcapDictionary, RedcapField } from '../data/redcap.ts';
import { knownRedcapFormat } from './functions.ts';
import { translateCalculation } from './redcap-calc.ts';
import type { RuleSpec } from './spec.ts';

type Severity = RuleSpec['severity'];

/**
 * Checks derived from define.xml, per dataset: values of variables with a codelist must be among
 * its coded values, mandatory variables must not be blank, character values must fit the declared
 * length. One rule per dataset and check, evaluated once per variable (`each`).
 */
export function defineRules(define: DefineMetadata, options: { checks: string[]; severity?: Severity | undefined }): RuleSpec[] {
  const rules: RuleSpec[] = [];
  const checks = new Set(options.checks);
  for (const dataset of define.datasets) {
    const scope = dataset.domain;
    // A split domain (LB as LBCH, LBHE, LBUR) has its variables described per dataset.
    const only = dataset.name === dataset.domain ? {} : { datasets: [dataset.name] };
    if (checks.has('codelist')) {
      const withList = dataset.variables.filter((v) => v.codelist && define.codelists[v.codelist]?.values.length);
      if (withList.length > 0) {
        rules.push({
          id: `DEF-CL-${dataset.name}`,
          scope,
          ...only,
          level: 'record',
          kind: 'cel',
          severity: options.severity ?? 'warning',
          message: `Value not in the variable's codelist (define.xml, ${dataset.name})`,
          references: { define: 'CodeListRef' },
          each: withList.map((v) => v.name),
          params: { codelists: Object.fromEntries(withList.map((v) => [v.name, define.codelists[v.codelist!]!.values])) },
          condition: `!isBlank(value) && !inList(value, params.codelists[field])`,
        });
      }
    }
    if (checks.has('required')) {
      const mandatory = dataset.variables.filter((v) => v.mandatory);
      if (mandatory.length > 0) {
        rules.push({
          id: `DEF-REQ-${dataset.name}`,
          scope,
          ...only,
          level: 'record',
          kind: 'cel',
          severity: options.severity ?? 'error',
          message: `Mandatory variable is blank (define.xml, ${dataset.name})`,
          references: { define: 'Mandatory' },
          each: mandatory.map((v) => v.name),
          condition: `isBlank(value)`,
        });
      }
    }
    if (checks.has('length')) {
      const sized = dataset.variables.filter((v) => v.length && v.dataType !== 'integer' && v.dataType !== 'float');
      if (sized.length > 0) {
        rules.push({
          id: `DEF-LEN-${dataset.name}`,
          scope,
          ...only,
          level: 'record',
          kind: 'cel',
          severity: options.severity ?? 'warning',
          message: `Value longer than the variable's length (define.xml, ${dataset.name})`,
          references: { define: 'Length' },
          each: sized.map((v) => v.name),
          params: { lengths: Object.fromEntries(sized.map((v) => [v.name, v.length])) },
          condition: `longerThan(value, params.lengths[field])`,
        });
      }
    }
  }
  return rules;
}

const NUMERIC_VALIDATION = new Set(['integer', 'number', 'number_1dp', 'number_2dp']);
const isCheckable = (f: RedcapField) => !['descriptive', 'file', 'sql'].includes(f.type);
const columnsOf = (f: RedcapField) => (f.type === 'checkbox' ? f.choices.map((c) => `${f.name}___${c.code.toLowerCase().replace(/[^a-z0-9_]/g, '_')}`) : [f.name]);

/**
 * REDCap's data quality rules as rule-set entries, per form: A blank values, B blank required
 * values, C wrong data type, D out of range, E numeric outliers (study level), G invalid multiple
 * choice, H calculated fields whose stored value differs from their calculation (when it
 * translates). Fields under branching logic are left out of A and B: REDCap does not report a
 * field its logic hides, and the logic is not evaluated here.
 */
export function redcapRules(dictionary: RedcapDictionary, options: { checks: string[]; severity?: Severity | undefined; sd?: number | undefined }): { rules: RuleSpec[]; notes: string[] } {
  const rules: RuleSpec[] = [];
  const notes: string[] = [];
  const checks = new Set(options.checks.map((c) => c.toUpperCase()));
  for (const form of dictionary.forms) {
    const fields = dictionary.fields.filter((f) => f.form === form && f.name !== dictionary.recordIdField && isCheckable(f));
    const add = (letter: string, rule: Omit<RuleSpec, 'id' | 'scope' | 'kind' | 'references' | 'severity'> & { kind?: RuleSpec['kind']; severity?: Severity }) =>
      rules.push({ kind: 'cel', severity: options.severity ?? 'warning', ...rule, id: `REDCAP-${letter}-${form}`, scope: form, references: { redcap: letter } } as RuleSpec);
    const blankable = fields.filter((f) => f.type !== 'calc' && f.type !== 'checkbox' && !f.branching);
    if (checks.has('A') && blankable.length > 0) add('A', { level: 'record', message: 'Blank value', each: blankable.map((f) => f.name), condition: 'isBlank(value)' });
    const required = blankable.filter((f) => f.required);
    if (checks.has('B') && required.length > 0) add('B', { level: 'record', severity: 'error', message: 'Blank value (required field)', each: required.map((f) => f.name), condition: 'isBlank(value)' });
    const validated = fields.filter((f) => f.type === 'text' && f.validation && knownRedcapFormat(f.validation));
    if (checks.has('C') && validated.length > 0) {
      add('C', { level: 'record', message: 'Incorrect data type', each: validated.map((f) => f.name), params: { validation: Object.fromEntries(validated.map((f) => [f.name, f.validation])) }, condition: '!isBlank(value) && !redcapFormatOk(value, params.validation[field])' });
    }
    const ranged = validated.filter((f) => (f.min || f.max) && (NUMERIC_VALIDATION.has(f.validation!) || f.validation!.startsWith('date')));
    if (checks.has('D') && ranged.length > 0) {
      add('D', {
        level: 'record',
        message: 'Out of range',
        each: ranged.map((f) => f.name),
        params: { validation: Object.fromEntries(ranged.map((f) => [f.name, f.validation])), min: Object.fromEntries(ranged.map((f) => [f.name, f.min ?? ''])), max: Object.fromEntries(ranged.map((f) => [f.name, f.max ?? ''])) },
        condition: '!isBlank(value) && redcapFormatOk(value, params.validation[field]) && outOfRange(value, params.validation[field], params.min[field], params.max[field])',
      });
    }
    const numeric = fields.filter((f) => (f.type === 'text' && f.validation && NUMERIC_VALIDATION.has(f.validation)) || f.type === 'calc' || f.type === 'slider');
    if (checks.has('E') && numeric.length > 0) add('E', { kind: 'outlier', level: 'study', message: `Numeric outlier (more than ${options.sd ?? 2} standard deviations from the mean)`, each: numeric.map((f) => f.name), params: { sd: options.sd ?? 2 } });
    const choice = fields.filter((f) => ['radio', 'dropdown', 'yesno', 'truefalse'].includes(f.type) && f.choices.length > 0);
    const boxes = fields.filter((f) => f.type === 'checkbox').flatMap(columnsOf);
    if (checks.has('G') && (choice.length > 0 || boxes.length > 0)) {
      add('G', {
        level: 'record',
        message: 'Invalid multiple choice value',
        each: [...choice.map((f) => f.name), ...boxes],
        params: { choices: { ...Object.fromEntries(choice.map((f) => [f.name, f.choices.map((c) => c.code)])), ...Object.fromEntries(boxes.map((b) => [b, ['0', '1']])) } },
        condition: '!isBlank(value) && !inList(value, params.choices[field])',
      });
    }
    if (checks.has('H')) {
      for (const calc of fields.filter((f) => f.type === 'calc' && f.calculation)) {
        try {
          const { cel, fields: inputs } = translateCalculation(calc.calculation!);
          // REDCap leaves a calculation blank when one of its fields is blank (or not a number): then
          // a saved value is the discrepancy; otherwise the saved value must be the result.
          const ready = inputs.map((i) => `isNumber(row.${i})`).join(' && ') || 'true';
          rules.push({
            id: `REDCAP-H-${form}-${calc.name}`,
            scope: form,
            level: 'record',
            kind: 'cel',
            severity: options.severity ?? 'warning',
            message: `Calculated field ${calc.name} differs from its calculation`,
            references: { redcap: 'H' },
            requires: [calc.name, ...inputs],
            condition: `${ready} ? calcDiffers(row.${calc.name}, ${cel}) : !isBlank(row.${calc.name})`,
          });
        } catch (error) {
          notes.push(`rule H: ${form}.${calc.name} is not checked, its calculation does not translate (${(error as Error).message})`);
        }
      }
    }
  }
  return { rules, notes };
}
