import { createHash } from 'node:crypto';
import { RuleEvaluationError } from '@fanout/rules';
import type { Column, Row } from '../data/table.ts';
import { text } from './functions.ts';
import { requiredOf, type CompiledRuleSpec } from './rule-set.ts';
import type { RuleSpec } from './spec.ts';

/** One problem found: where (subject, dataset, record, variables) and by which rule. */
export interface Finding {
  key: string;
  ruleId: string;
  level: 'record' | 'subject' | 'study';
  subject: string | null;
  site: string | null;
  domain: string | null;
  dataset: string | null;
  recno: number | null;
  variables: string[];
  values: string[];
  message: string;
  severity: string;
}

export interface RecordRef {
  dataset: string;
  domain: string;
  recno: number;
  row: Row;
}

/** A dataset of the run as the engine sees it: its name, domain and columns. */
export interface DatasetShape {
  id: string;
  name: string;
  domain: string;
  columns: Column[];
}

/** Per rule: the issues found and the evaluation errors (a record of an unexpected type). */
export interface RuleTally {
  errors: number;
  firstError: string | null;
}

const REDCAP_IDENTITY = ['redcap_event_name', 'redcap_repeat_instrument', 'redcap_repeat_instance'];

/**
 * What identifies a record across uploads, so a finding keeps its key when the data is corrected
 * and uploaded again: --SEQ where the domain has one, the visit in SV, the subject in DM, the
 * parent record and qualifier in SUPP--, the event and instance in REDCap; otherwise its number.
 */
export function recordIdentity(domain: string, row: Row, recno: number): string {
  const seq = row[`${domain.slice(0, 2)}SEQ`];
  if (seq !== undefined && seq !== null && seq !== '') return `seq=${text(seq)}`;
  if (domain === 'DM') return 'dm';
  if (domain === 'SV' && row.VISITNUM != null) return `visit=${text(row.VISITNUM)}`;
  if (domain.startsWith('SUPP') || domain === 'RELREC') return ['RDOMAIN', 'IDVAR', 'IDVARVAL', 'QNAM', 'RELID'].map((c) => text(row[c])).join('|');
  if (REDCAP_IDENTITY.some((c) => c in row)) return REDCAP_IDENTITY.map((c) => text(row[c])).join('|');
  return `rec=${recno}`;
}

export function findingKey(ruleId: string, dataset: string | null, subject: string | null, identity: string, field: string): string {
  return createHash('sha256').update([ruleId, dataset ?? '', subject ?? '', identity, field].join('\u0000')).digest('hex').slice(0, 32);
}

/** Which rules a study's datasets cannot run, and why (a missing dataset or column). */
export function skippedRules(rules: readonly RuleSpec[], datasets: readonly DatasetShape[], standard: 'sdtm' | 'redcap'): Map<string, string> {
  const skipped = new Map<string, string>();
  const byDomain = new Map<string, DatasetShape[]>();
  for (const d of datasets) byDomain.set(d.domain, [...(byDomain.get(d.domain) ?? []), d]);
  for (const rule of rules) {
    const scopes = rule.scope === '*' ? [...byDomain.keys()] : rule.scope.split(',').map((s) => s.trim());
    const present = scopes.filter((s) => byDomain.has(s));
    if (present.length === 0) {
      skipped.set(rule.id, `the study has no ${rule.scope} ${standard === 'sdtm' ? 'dataset' : 'form'}`);
      continue;
    }
    const needs = requiredOf(rule);
    const missingDomain = needs.domains.find((d) => !byDomain.has(d));
    if (missingDomain) {
      skipped.set(rule.id, `needs the ${missingDomain} ${standard === 'sdtm' ? 'dataset' : 'form'}, which the study lacks`);
      continue;
    }
    if (rule.level === 'subject' || rule.scope === '*') continue;
    const columns = new Set(present.flatMap((s) => byDomain.get(s)!.flatMap((d) => d.columns.map((c) => c.name))));
    const missing = needs.variables.filter((v) => !columns.has(v));
    if (missing.length > 0) skipped.set(rule.id, `needs ${missing.join(', ')}; the ${present.join(', ')} ${standard === 'sdtm' ? 'dataset' : 'form'} has no such column`);
    else if (rule.each && !rule.each.some((v) => columns.has(v))) skipped.set(rule.id, `none of its variables (${rule.each.slice(0, 5).join(', ')}${rule.each.length > 5 ? '…' : ''}) is in the ${present.join(', ')} data`);
  }
  return skipped;
}

/** One subject's data: their records by domain, their DM (or first) record, their site. */
export interface SubjectData {
  subject: string;
  site: string | null;
  subjectRow: Row;
  records: RecordRef[];
}

export const MAX_FINDINGS_PER_SUBJECT_RULE = 10_000;

/**
 * Evaluates the record- and subject-level CEL rules of a run on one subject's data. Returns the
 * findings (keyed) and, per rule, the records the rule could not evaluate (counted as errors).
 */
export function evaluateSubject(rules: readonly CompiledRuleSpec[], data: SubjectData, trial: Record<string, Row[]>): { findings: Finding[]; tallies: Map<string, RuleTally> } {
  const findings: Finding[] = [];
  const tallies = new Map<string, RuleTally>();
  const domains: Record<string, Row[]> = {};
  const byDomain = new Map<string, RecordRef[]>();
  for (const r of data.records) {
    (domains[r.domain] ??= []).push(r.row);
    const list = byDomain.get(r.domain);
    if (list) list.push(r);
    else byDomain.set(r.domain, [r]);
  }
  const fail = (rule: CompiledRuleSpec, error: unknown) => {
    const tally = tallies.get(rule.id) ?? { errors: 0, firstError: null };
    tally.errors++;
    tally.firstError ??= error instanceof RuleEvaluationError ? error.reason : (error as Error).message;
    tallies.set(rule.id, tally);
  };
  for (const rule of rules) {
    if (rule.kind !== 'cel') continue;
    const params = rule.params ?? {};
    let found = 0;
    const add = (f: Omit<Finding, 'key' | 'ruleId' | 'level' | 'subject' | 'site' | 'message' | 'severity'>, identity: string, field: string) => {
      if (++found > MAX_FINDINGS_PER_SUBJECT_RULE) return;
      findings.push({ key: findingKey(rule.id, f.dataset, data.subject, identity, field), ruleId: rule.id, level: rule.level, subject: data.subject, site: data.site, message: rule.message, severity: rule.severity, ...f });
    };
    if (rule.level === 'subject') {
      const vars = { subject: data.subjectRow, domains, trial, params, usubjid: data.subject };
      try {
        if (rule.compiledCondition!.test(vars)) {
          const scope = rule.scope.split(',')[0]!.trim();
          const anchor = byDomain.get(scope)?.[0];
          const shown = requiredOf(rule).variables.filter((v) => v in data.subjectRow);
          add({ domain: scope, dataset: anchor?.dataset ?? null, recno: anchor?.recno ?? null, variables: shown, values: shown.map((v) => text(data.subjectRow[v])) }, 'subject', '');
        }
      } catch (error) {
        fail(rule, error);
      }
      continue;
    }
    const scopes = rule.scope === '*' ? [...byDomain.keys()] : rule.scope.split(',').map((s) => s.trim());
    const shownVariables = requiredOf(rule).variables;
    const vars: Record<string, unknown> = { row: null, subject: data.subjectRow, domains, trial, params, dataset: '', field: '', value: null };
    const onlyDatasets = rule.datasets ? new Set(rule.datasets) : null;
    for (const scope of scopes) {
      for (const record of byDomain.get(scope) ?? []) {
        if (onlyDatasets && !onlyDatasets.has(record.dataset)) continue;
        vars.row = record.row;
        vars.dataset = record.dataset;
        vars.field = '';
        vars.value = null;
        try {
          if (rule.compiledWhen && !rule.compiledWhen.test(vars)) continue;
        } catch (error) {
          fail(rule, error);
          continue;
        }
        if (rule.each) {
          for (const field of rule.each) {
            if (!(field in record.row)) continue;
            vars.field = field;
            vars.value = record.row[field];
            try {
              if (rule.compiledCondition!.test(vars)) add({ domain: record.domain, dataset: record.dataset, recno: record.recno, variables: [field], values: [text(record.row[field])] }, recordIdentity(record.domain, record.row, record.recno), field);
            } catch (error) {
              fail(rule, error);
            }
          }
          continue;
        }
        try {
          if (rule.compiledCondition!.test(vars)) {
            const shown = shownVariables.filter((v) => v in record.row);
            add({ domain: record.domain, dataset: record.dataset, recno: record.recno, variables: shown, values: shown.map((v) => text(record.row[v])) }, recordIdentity(record.domain, record.row, record.recno), '');
          }
        } catch (error) {
          fail(rule, error);
        }
      }
    }
    if (found > MAX_FINDINGS_PER_SUBJECT_RULE) fail(rule, new Error(`more than ${MAX_FINDINGS_PER_SUBJECT_RULE} issues for one subject: the rest were not recorded`));
  }
  return { findings, tallies };
}
