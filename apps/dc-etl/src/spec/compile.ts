import { createHash } from 'node:crypto';
import { selfReferenceAt, unstorableTextAt } from '@fanout/http';
import { compileRule, RuleCompileError, type CompiledRule } from '@fanout/rules';
import { parseDocument } from 'yaml';
import type { z } from 'zod';
import { compileDateFormat, type DateParser } from './dates.ts';
import { specSchema, type ColumnType, type Spec } from './schema.ts';
import { conversionTo, ucumProblem, type Conversion } from './units.ts';

/** One problem with a spec, named by its path (`spec.columns.3.type`). */
export interface SpecIssue {
  field: string;
  rule: string;
  message: string;
}

/** A spec that does not parse, breaks the schema, or refers to what does not exist. */
export class SpecError extends Error {
  readonly issues: SpecIssue[];
  constructor(issues: SpecIssue[]) {
    const first = issues[0]!;
    super(`${first.field}: ${first.message}`);
    this.issues = issues;
  }
}

const path = (parts: readonly PropertyKey[]) => ['spec', ...parts.map(String)].join('.');

/** Reads a spec written as YAML or JSON (JSON is YAML) and checks it against the schema. */
export function parseSpec(text: string): Spec {
  if (text.trim() === '') throw new SpecError([{ field: 'spec', rule: 'required', message: 'the spec is empty' }]);
  // The text is stored as it came (a comment included), and PostgreSQL stores no NUL in text.
  const raw = unstorableTextAt(text, 'spec');
  if (raw) {
    const at = text.search(raw.rule === 'nul_character' ? /\u0000/ : /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
    const line = at < 0 ? '' : ` (line ${text.slice(0, at).split('\n').length})`;
    throw new SpecError([{ field: 'spec', rule: raw.rule, message: `spec${line}: ${raw.message}` }]);
  }
  const doc = parseDocument(text, { uniqueKeys: true });
  if (doc.errors.length > 0) {
    const error = doc.errors[0]!;
    const where = error.linePos?.[0] ? ` at line ${error.linePos[0].line}, column ${error.linePos[0].col}` : '';
    throw new SpecError([{ field: 'spec', rule: 'invalid_syntax', message: `not valid YAML or JSON${where}: ${error.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '')}` }]);
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    // An alias bomb: the YAML library refuses to expand it.
    throw new SpecError([{ field: 'spec', rule: 'invalid_syntax', message: `not a usable spec: ${(error as Error).message}` }]);
  }
  // An alias inside its own anchor (`a: &a [*a]`): a value inside itself, which is no spec.
  const loop = selfReferenceAt(value, 'spec');
  if (loop) throw new SpecError([{ field: loop, rule: 'invalid_syntax', message: 'refers to itself (an alias inside its own anchor); a spec is a tree' }]);
  // A value holding NUL, or half a character from a "\ud800" escape: neither is stored.
  const bad = unstorableTextAt(value, 'spec');
  if (bad) throw new SpecError([{ field: bad.field, rule: bad.rule, message: bad.message }]);
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new SpecError([{ field: 'spec', rule: 'invalid_type', message: 'must be a mapping (target, columns, ...)' }]);
  const result = specSchema.safeParse(value);
  if (!result.success) throw new SpecError(result.error.issues.map((i: z.core.$ZodIssue) => ({ field: path(i.path), rule: i.code, message: i.message })));
  return result.data;
}

export interface CompiledUnit {
  /** The source column of the per-row unit, or null for one unit for all rows. */
  sourceColumn: string | null;
  /** Conversion by source unit string (as found in the file, after the map). */
  conversions: Map<string, Conversion | null>;
  map: Record<string, string>;
  targets: string[];
  fixed: Conversion | null;
  into: string | null;
}

export interface CompiledColumn {
  name: string;
  type: ColumnType;
  sources: string[];
  join: string;
  split: { separator: string; index: number } | null;
  required: boolean;
  nullTokens: Set<string>;
  dates: DateParser[] | null;
  decimalComma: boolean;
  trueValues: Set<string>;
  falseValues: Set<string>;
  codelist: { values: Map<string, string>; ignoreCase: boolean } | null;
  unit: CompiledUnit | null;
  maxLength: number | null;
}

export interface CompiledRuleSpec {
  id: string;
  rule: CompiledRule;
  /** true: a row is rejected when the condition holds; false: when it does not. */
  rejectWhen: boolean;
  column: string | null;
  message: string;
}

/** What a target column is in the tables: its name and PostgreSQL type. */
export interface TargetColumn {
  name: string;
  type: ColumnType;
}

export interface CompiledSpec {
  spec: Spec;
  /** SHA-256 of the spec's canonical JSON: the manifest's spec fingerprint. */
  hash: string;
  columns: CompiledColumn[];
  /** The target table's columns in order (unit columns after the value they describe). */
  targetColumns: TargetColumn[];
  rules: CompiledRuleSpec[];
  /** Every source column the spec reads. */
  sourceColumns: string[];
  trim: boolean;
}

export const SQL_TYPE: Record<ColumnType, string> = {
  text: 'text',
  integer: 'bigint',
  number: 'double precision',
  boolean: 'boolean',
  date: 'date',
  timestamp: 'timestamptz',
};

/**
 * Resolves what a spec refers to (codelists, units, date formats, rule variables, dedupe
 * columns) and compiles its rules; every problem is reported with its path.
 */
export function compileSpec(spec: Spec): CompiledSpec {
  const issues: SpecIssue[] = [];
  const columns: CompiledColumn[] = [];
  const targetColumns: TargetColumn[] = [];
  const names = new Set<string>();
  const addTarget = (name: string, type: ColumnType, field: string) => {
    if (names.has(name)) issues.push({ field, rule: 'duplicate', message: `the target column "${name}" is defined twice` });
    names.add(name);
    targetColumns.push({ name, type });
  };
  spec.columns.forEach((c, i) => {
    addTarget(c.name, c.type, path(['columns', i, 'name']));
    let dates: DateParser[] | null = null;
    if (c.type === 'date') {
      dates = [];
      for (const [j, format] of (c.formats ?? ['iso']).entries()) {
        try {
          dates.push(compileDateFormat(format));
        } catch (error) {
          issues.push({ field: path(['columns', i, 'formats', j]), rule: 'invalid_format', message: (error as Error).message });
        }
      }
    } else if (c.formats) {
      issues.push({ field: path(['columns', i, 'formats']), rule: 'not_applicable', message: `formats apply to date columns; this one is ${c.type}` });
    }
    let codelist: CompiledColumn['codelist'] = null;
    if (c.codelist !== undefined) {
      const list = typeof c.codelist === 'string' ? spec.codelists[c.codelist] : { values: c.codelist, ignoreCase: false };
      if (!list) issues.push({ field: path(['columns', i, 'codelist']), rule: 'unknown_codelist', message: `no codelist "${c.codelist}" in spec.codelists` });
      else codelist = { ignoreCase: list.ignoreCase, values: new Map(list.values.map((v) => [list.ignoreCase ? v.toLowerCase() : v, v])) };
    }
    let unit: CompiledUnit | null = null;
    if (c.unit) {
      if (c.type !== 'number') issues.push({ field: path(['columns', i, 'unit']), rule: 'not_applicable', message: `unit conversion applies to number columns; this one is ${c.type}` });
      const targets = typeof c.unit.to === 'string' ? [c.unit.to] : c.unit.to;
      targets.forEach((t, j) => {
        const problem = ucumProblem(t);
        if (problem) issues.push({ field: path(['columns', i, 'unit', 'to', ...(typeof c.unit!.to === 'string' ? [] : [j])]), rule: 'invalid_unit', message: problem });
      });
      for (const [from, code] of Object.entries(c.unit.map)) {
        const problem = ucumProblem(code);
        if (problem) issues.push({ field: path(['columns', i, 'unit', 'map', from]), rule: 'invalid_unit', message: problem });
      }
      let fixed: Conversion | null = null;
      if (c.unit.from !== undefined) {
        const code = c.unit.map[c.unit.from] ?? c.unit.from;
        const problem = ucumProblem(code);
        fixed = problem ? null : conversionTo(code, targets);
        if (problem) issues.push({ field: path(['columns', i, 'unit', 'from']), rule: 'invalid_unit', message: problem });
        else if (!fixed) issues.push({ field: path(['columns', i, 'unit', 'from']), rule: 'not_convertible', message: `"${code}" converts to none of ${targets.join(', ')}` });
      }
      unit = { sourceColumn: c.unit.column ?? null, conversions: new Map(), map: c.unit.map, targets, fixed, into: c.unit.into ?? null };
      if (c.unit.into) addTarget(c.unit.into, 'text', path(['columns', i, 'unit', 'into']));
    }
    const sources = c.source === undefined ? [c.name] : typeof c.source === 'string' ? [c.source] : c.source;
    columns.push({
      name: c.name,
      type: c.type,
      sources,
      join: c.join,
      split: c.split ?? null,
      required: c.required,
      nullTokens: new Set([...spec.nullTokens, ...(c.nullTokens ?? [])]),
      dates,
      decimalComma: c.decimal === ',',
      trueValues: new Set(c.trueValues.map((v) => v.toLowerCase())),
      falseValues: new Set(c.falseValues.map((v) => v.toLowerCase())),
      codelist,
      unit,
      maxLength: c.maxLength ?? null,
    });
  });

  const rules: CompiledRuleSpec[] = [];
  const variables = targetColumns.map((c) => c.name);
  const ruleIds = new Set<string>();
  spec.rules.forEach((r, i) => {
    if (ruleIds.has(r.id)) issues.push({ field: path(['rules', i, 'id']), rule: 'duplicate', message: `the rule id "${r.id}" is used twice` });
    ruleIds.add(r.id);
    const key = r.reject !== undefined ? 'reject' : 'assert';
    try {
      const rule = compileRule((r.reject ?? r.assert)!, { id: r.id, variables });
      if (r.column !== undefined && !names.has(r.column)) issues.push({ field: path(['rules', i, 'column']), rule: 'unknown_column', message: `no target column "${r.column}"` });
      rules.push({ id: r.id, rule, rejectWhen: key === 'reject', column: r.column ?? rule.variables[0] ?? null, message: r.message ?? `${key === 'reject' ? 'rejected by' : 'fails'} rule ${r.id}: ${(r.reject ?? r.assert)!}` });
    } catch (error) {
      if (!(error instanceof RuleCompileError)) throw error;
      issues.push({ field: path(['rules', i, key]), rule: 'invalid_rule', message: error.message });
    }
  });

  if (spec.dedupe) {
    spec.dedupe.key.forEach((k, i) => {
      if (!names.has(k)) issues.push({ field: path(['dedupe', 'key', i]), rule: 'unknown_column', message: `no target column "${k}" (known: ${variables.join(', ')})` });
    });
    spec.dedupe.order.forEach((o, i) => {
      if (!names.has(o.column)) issues.push({ field: path(['dedupe', 'order', i, 'column']), rule: 'unknown_column', message: `no target column "${o.column}"` });
    });
  }
  if (issues.length > 0) throw new SpecError(issues);

  const sourceColumns = [...new Set(columns.flatMap((c) => [...c.sources, ...(c.unit?.sourceColumn ? [c.unit.sourceColumn] : [])]))];
  return { spec, hash: createHash('sha256').update(JSON.stringify(spec)).digest('hex'), columns, targetColumns, rules, sourceColumns, trim: spec.trim };
}

/**
 * Checks a file's header against the spec: every source column must be in it, once. A header
 * with none of them is the wrong file (or has no header at all); otherwise each missing column is
 * named by the spec field that asks for it, and each named twice by the header.
 */
export function headerIssues(compiled: CompiledSpec, header: readonly string[]): SpecIssue[] {
  const present = new Set(header);
  const found = compiled.sourceColumns.filter((c) => present.has(c));
  const shown = header.slice(0, 12).map((h) => JSON.stringify(h)).join(', ') + (header.length > 12 ? ', ...' : '');
  if (found.length === 0) {
    return [{ field: 'file.header', rule: 'header_mismatch', message: `the header (line ${compiled.spec.source.headerRow}: ${shown || 'empty'}) has none of the spec's columns (${compiled.sourceColumns.slice(0, 8).join(', ')}); wrong file, or no header line` }];
  }
  const issues: SpecIssue[] = [];
  // A column the spec reads must be named once: which of two would it be?
  const read = new Set(compiled.sourceColumns);
  const positions = new Map<string, number[]>();
  header.forEach((h, i) => {
    if (read.has(h)) positions.set(h, [...(positions.get(h) ?? []), i + 1]);
  });
  for (const [name, at] of positions) {
    if (at.length > 1) issues.push({ field: 'file.header', rule: 'duplicate_column', message: `the header names "${name}" ${at.length} times (columns ${at.join(', ')}), and the spec reads it: name each column once` });
  }
  compiled.spec.columns.forEach((c, i) => {
    const sources = c.source === undefined ? [c.name] : typeof c.source === 'string' ? [c.source] : c.source;
    sources.forEach((s, j) => {
      if (!present.has(s)) {
        const field = c.source === undefined ? path(['columns', i, 'name']) : typeof c.source === 'string' ? path(['columns', i, 'source']) : path(['columns', i, 'source', j]);
        issues.push({ field, rule: 'unknown_column', message: `the file has no column "${s}" (its header: ${shown})` });
      }
    });
    if (c.unit?.column !== undefined && !present.has(c.unit.column)) issues.push({ field: path(['columns', i, 'unit', 'column']), rule: 'unknown_column', message: `the file has no column "${c.unit.column}" (its header: ${shown})` });
  });
  return issues;
}
