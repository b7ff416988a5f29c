import { compileRule, RuleCompileError, type CompiledRule } from '@fanout/rules';
import { selfReferenceAt, unstorableTextAt } from '@fanout/http';
import { LineCounter, parseDocument, isScalar } from 'yaml';
import type { DefineMetadata } from '../data/define-xml.ts';
import type { RedcapDictionary } from '../data/redcap.ts';
import { isSdtmDomain } from '../data/sdtm-domains.ts';
import { RULE_FUNCTIONS } from './functions.ts';
import { defineRules, redcapRules } from './generators.ts';
import { ruleSetSpec, ruleSpec, type RuleSpec } from './spec.ts';

/** A mistake in an uploaded rule set: the rule, the field, what is wrong and where. */
export class RuleSetError extends Error {
  override name = 'RuleSetError';
  readonly issues: { field: string; rule: string; message: string }[];
  constructor(issues: { field: string; rule: string; message: string }[]) {
    super(issues[0]?.message ?? 'invalid rule set');
    this.issues = issues;
  }
}

/** The variables a rule's CEL sees, by where it is evaluated. */
export const RECORD_VARIABLES = ['row', 'subject', 'domains', 'trial', 'params', 'field', 'value', 'dataset'];
export const SUBJECT_VARIABLES = ['subject', 'domains', 'trial', 'params', 'usubjid'];
export const FILTER_VARIABLES = ['row', 'params'];

/** What a study offers to a rule set: its standard and, for REDCap, its forms and dictionary. */
export interface StudyShape {
  standard: 'sdtm' | 'redcap';
  define: DefineMetadata | null;
  dictionary: RedcapDictionary | null;
}

export interface ExpandedRuleSet {
  name: string;
  description: string | null;
  maxIssuesPerRule: number;
  rules: RuleSpec[];
  /** What the generators could not turn into rules (a REDCap calculation that does not translate). */
  notes: string[];
}

// A rule's needs, worked out once per rule object: the engine asks for every subject it evaluates.
const required = new WeakMap<RuleSpec, { variables: string[]; domains: string[] }>();

/** The variables a rule reads as `row.NAME` or `domains.NAME` (a study lacking them skips the rule). */
export function requiredOf(rule: RuleSpec): { readonly variables: readonly string[]; readonly domains: readonly string[] } {
  let needs = required.get(rule);
  if (!needs) required.set(rule, (needs = readRequired(rule)));
  return needs;
}

function readRequired(rule: RuleSpec): { variables: string[]; domains: string[] } {
  const source = [rule.condition, rule.when].filter(Boolean).join('\n');
  const variables = new Set(rule.requires ?? []);
  // A variable the rule tests with has(row.X) is optional: the rule copes without it.
  const optional = new Set([...source.matchAll(/\bhas\(\s*row\.([A-Za-z][A-Za-z0-9_]*)\s*\)/g)].map((m) => m[1]!));
  for (const m of source.matchAll(/\brow\.([A-Za-z][A-Za-z0-9_]*)/g)) if (!optional.has(m[1]!)) variables.add(m[1]!);
  const domains = new Set<string>();
  // domains.X may be absent for one subject (has() tests it); trial.X must exist in the study.
  for (const m of source.matchAll(/\btrial\.([A-Za-z][A-Za-z0-9_]*)/g)) domains.add(m[1]!);
  for (const m of source.matchAll(/\bdomains\.([A-Za-z][A-Za-z0-9_]*)/g)) domains.add(m[1]!);
  return { variables: [...variables], domains: [...domains] };
}

export interface CompiledRuleSpec extends RuleSpec {
  compiledWhen: CompiledRule | null;
  compiledCondition: CompiledRule | null;
}

/** Compiles a rule's CEL (when it has any); errors name the rule and the position. */
export function compileSpec(rule: RuleSpec): CompiledRuleSpec {
  const variables = rule.level === 'subject' ? SUBJECT_VARIABLES : rule.level === 'study' ? FILTER_VARIABLES : RECORD_VARIABLES;
  const compile = (source: string | undefined, part: string) =>
    source ? compileRule(source, { id: part === 'condition' ? rule.id : `${rule.id} (${part})`, functions: RULE_FUNCTIONS, variables: part === 'when' && rule.level === 'subject' ? RECORD_VARIABLES : variables }) : null;
  return { ...rule, compiledWhen: compile(rule.when, 'when'), compiledCondition: compile(rule.condition, 'condition') };
}

/**
 * Reads an uploaded rule set (YAML): checks its shape, runs its generators against the study
 * (define.xml, the REDCap dictionary), and compiles every rule's CEL. Every mistake is reported:
 * the rule's id, the field, and for CEL the line and column in the condition and in the file.
 */
/**
 * The document as plain values: refused when its aliases expand beyond what the YAML library allows
 * (an alias bomb) or a value holds the NUL character or half a character (stored in no JSON column).
 */
function plainValue(doc: ReturnType<typeof parseDocument>): unknown {
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    throw new RuleSetError([{ field: 'body', rule: 'invalid_yaml', message: `not a usable rule set: ${(error as Error).message}` }]);
  }
  // An alias inside its own anchor (`a: &a [*a]`): a value inside itself, which is no rule set.
  const loop = selfReferenceAt(value, 'body');
  if (loop) throw new RuleSetError([{ field: loop, rule: 'invalid_yaml', message: `${loop}: refers to itself (an alias inside its own anchor); a rule set is a tree` }]);
  // A value holding NUL, or half a character from a "\ud800" escape: neither is stored.
  const bad = unstorableTextAt(value, 'body');
  if (bad) throw new RuleSetError([{ field: bad.field, rule: bad.rule, message: `${bad.field}: ${bad.message}` }]);
  return value;
}

export function parseRuleSet(source: string, study: StudyShape): ExpandedRuleSet {
  const lines = new LineCounter();
  const doc = parseDocument(source, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new RuleSetError(
      doc.errors.slice(0, 10).map((e) => {
        const pos = e.linePos?.[0];
        return { field: 'body', rule: 'invalid_yaml', message: `not valid YAML: ${e.message.split('\n')[0]}${pos ? ` (line ${pos.line}, column ${pos.col})` : ''}` };
      }),
    );
  }
  const top = ruleSetSpec.safeParse(plainValue(doc));
  if (!top.success) throw new RuleSetError(top.error.issues.map((i) => ({ field: ['body', ...i.path.map(String)].join('.'), rule: i.code, message: `${i.path.join('.') || 'rule set'}: ${i.message}` })));
  const issues: { field: string; rule: string; message: string }[] = [];
  const rules: RuleSpec[] = [];
  const notes: string[] = [];
  top.data.rules.forEach((raw, index) => {
    const parsed = ruleSpec.safeParse(raw);
    const id = (raw as { id?: unknown } | null)?.id;
    const name = typeof id === 'string' ? `rule ${id}` : `rule ${index + 1}`;
    if (!parsed.success) {
      for (const i of parsed.error.issues) issues.push({ field: ['body', 'rules', String(index), ...i.path.map(String)].join('.'), rule: i.code, message: `${name}: ${i.path.join('.') || 'rule'}: ${i.message}` });
      return;
    }
    rules.push(parsed.data);
  });
  for (const generator of top.data.generate ?? []) {
    if (generator.from === 'define') {
      if (study.standard !== 'sdtm' || !study.define) issues.push({ field: 'body.generate', rule: 'define_required', message: 'generate from define: upload the study\u2019s define.xml first' });
      else rules.push(...defineRules(study.define, generator));
    } else {
      if (study.standard !== 'redcap' || !study.dictionary) issues.push({ field: 'body.generate', rule: 'dictionary_required', message: 'generate from redcap: upload the project\u2019s data dictionary first' });
      else {
        const generated = redcapRules(study.dictionary, generator);
        rules.push(...generated.rules);
        notes.push(...generated.notes);
      }
    }
  }
  const seen = new Set<string>();
  const forms = new Set(study.dictionary?.forms ?? []);
  rules.forEach((rule, index) => {
    const field = `body.rules.${index}`;
    if (seen.has(rule.id)) issues.push({ field: `${field}.id`, rule: 'duplicate', message: `rule ${rule.id}: the id is used twice` });
    seen.add(rule.id);
    const scopes = rule.scope === '*' ? [] : rule.scope.split(',').map((s) => s.trim());
    for (const scope of scopes) {
      const known = study.standard === 'sdtm' ? isSdtmDomain(scope) : forms.has(scope);
      if (!known) issues.push({ field: `${field}.scope`, rule: 'unknown_domain', message: `rule ${rule.id}: unknown ${study.standard === 'sdtm' ? 'SDTM domain' : 'REDCap form'} "${scope}"${study.standard === 'redcap' ? ` (forms: ${[...forms].join(', ')})` : ''}` });
    }
    for (const d of requiredOf(rule).domains) {
      const known = study.standard === 'sdtm' ? isSdtmDomain(d) : forms.has(d);
      if (!known) issues.push({ field: `${field}.condition`, rule: 'unknown_domain', message: `rule ${rule.id}: unknown domain "${d}" in the condition` });
    }
    try {
      compileSpec(rule);
    } catch (error) {
      if (!(error instanceof RuleCompileError)) throw error;
      const part = error.ruleId.endsWith('(when)') ? 'when' : 'condition';
      // Where the condition starts in the file, for an editor's line number.
      const node = doc.getIn(['rules', index, part], true);
      let where = '';
      if (isScalar(node) && node.range && error.position) {
        const start = lines.linePos(node.range[0]);
        const blockOffset = node.type === 'BLOCK_LITERAL' || node.type === 'BLOCK_FOLDED' ? 1 : 0;
        where = ` (file line ${start.line + blockOffset + error.position.line - 1})`;
      }
      issues.push({ field: `${field}.${part}`, rule: 'cel_error', message: `${error.message}${where}` });
    }
  });
  if (issues.length > 0) throw new RuleSetError(issues);
  return { name: top.data.name, description: top.data.description ?? null, maxIssuesPerRule: top.data.maxIssuesPerRule, rules, notes };
}
