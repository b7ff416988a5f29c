import { RuleEvaluationError } from '@fanout/rules';
import { parseTimestamp } from '../spec/dates.ts';
import type { CompiledColumn, CompiledSpec } from '../spec/compile.ts';
import { conversionTo, ucumProblem, type Conversion } from '../spec/units.ts';

/** Why a row is rejected: the target column (when one is to blame), a reason code, a message. */
export interface Problem {
  column: string | null;
  reason: string;
  message: string;
}

/** A row's target values, or why it is rejected (every problem found, not just the first). */
export type CleanResult = { values: unknown[]; problems: null } | { values: null; problems: Problem[] };

const INTEGER = /^[+-]?\d+$/;
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const show = (text: string) => JSON.stringify(text.length > 60 ? `${text.slice(0, 57)}...` : text);

// A value that failed to parse: rules that read it are not evaluated.
const FAILED = Symbol('failed');

export interface ColumnReader {
  column: CompiledColumn;
  /** Where the column's value (and its unit column's) goes in the row. */
  slot: number;
  unitSlot: number;
  indices: number[];
  unitIndex: number;
}

/**
 * Turns a record's fields into the target row: picks and joins the source columns, trims, maps
 * null tokens, checks codelists, parses types and dates, converts units, then evaluates the
 * rules on the typed values. Built once per chunk, run once per record.
 */
export class RowCleaner {
  readonly #readers: ColumnReader[];
  readonly #spec: CompiledSpec;
  readonly #names: string[];
  readonly #width: number;
  readonly #variables: Record<string, unknown> = {};
  readonly #ruleSlots: number[][];

  constructor(spec: CompiledSpec, header: readonly string[]) {
    this.#spec = spec;
    this.#names = spec.targetColumns.map((c) => c.name);
    this.#ruleSlots = spec.rules.map((r) => r.rule.variables.map((v) => this.#names.indexOf(v)));
    this.#width = header.length;
    const index = new Map<string, number>();
    header.forEach((h, i) => {
      if (!index.has(h)) index.set(h, i);
    });
    const slotOf = new Map(this.#names.map((n, i) => [n, i]));
    this.#readers = spec.columns.map((column) => ({
      column,
      slot: slotOf.get(column.name)!,
      unitSlot: column.unit?.into ? slotOf.get(column.unit.into)! : -1,
      indices: column.sources.map((s) => index.get(s) ?? -1),
      unitIndex: column.unit?.sourceColumn ? (index.get(column.unit.sourceColumn) ?? -1) : -1,
    }));
  }

  /** How many fields a record of this file has. */
  get width(): number {
    return this.#width;
  }

  /** The source columns each spec column reads, its target slots (for the chunk encoder). */
  get readers(): readonly ColumnReader[] {
    return this.#readers;
  }

  clean(fields: readonly string[]): CleanResult {
    if (fields.length !== this.#width) {
      return { values: null, problems: [{ column: null, reason: 'field_count', message: `expected ${this.#width} fields (the header's), found ${fields.length}` }] };
    }
    const values: unknown[] = new Array(this.#names.length).fill(null);
    let problems: Problem[] | null = null;
    for (const reader of this.#readers) {
      const problem = this.#read(reader, fields, values);
      if (problem) (problems ??= []).push(problem);
    }
    problems = this.ruleProblems(values, problems);
    if (problems) return { values: null, problems };
    return { values, problems: null };
  }

  /**
   * Reads one spec column (by its index in the spec) into `values`: its slot, and its unit
   * column's. `fields` needs only the source fields that column reads.
   */
  readColumn(index: number, fields: readonly string[], values: unknown[]): Problem | null {
    return this.#read(this.#readers[index]!, fields, values);
  }

  /** Evaluates the rules on a row's typed values; adds what they reject to `problems`. */
  ruleProblems(values: readonly unknown[], problems: Problem[] | null): Problem[] | null {
    const rules = this.#spec.rules;
    if (rules.length === 0) return problems;
    // One variables object, refilled per row with what the rules read: they keep nothing.
    const variables = this.#variables;
    for (const slots of this.#ruleSlots) for (const slot of slots) variables[this.#names[slot]!] = values[slot];
    for (let k = 0; k < rules.length; k++) {
      const r = rules[k]!;
      const slots = this.#ruleSlots[k]!;
      let skip = false;
      for (const slot of slots) if (values[slot] === FAILED) skip = true;
      if (skip) continue;
      let outcome: boolean;
      try {
        outcome = r.rule.test(variables);
      } catch (error) {
        // A null makes most conditions undefined (null > 100): the rule does not apply, as a
        // SQL CHECK passes on NULL. Other errors are the rule's own and reject the row.
        if (error instanceof RuleEvaluationError && slots.some((slot) => values[slot] === null)) continue;
        (problems ??= []).push({ column: r.column, reason: `rule:${r.id}`, message: `rule ${r.id} could not be evaluated: ${(error as Error).message}` });
        continue;
      }
      if (outcome === r.rejectWhen) (problems ??= []).push({ column: r.column, reason: `rule:${r.id}`, message: r.message });
    }
    return problems;
  }

  /** The target slots the rules read (their values must be typed). */
  get ruleSlots(): ReadonlySet<number> {
    return new Set(this.#ruleSlots.flat());
  }

  #read(reader: ColumnReader, fields: readonly string[], values: unknown[]): Problem | null {
    const c = reader.column;
    let text: string;
    if (reader.indices.length === 1) text = fields[reader.indices[0]!]!;
    else {
      const parts = reader.indices.map((i) => (this.#spec.trim ? fields[i]!.trim() : fields[i]!));
      text = parts.every((p) => p === '' || c.nullTokens.has(p)) ? '' : parts.join(c.join);
    }
    if (this.#spec.trim) text = text.trim();
    if (c.split && !c.nullTokens.has(text)) {
      const parts = text.split(c.split.separator);
      if (parts.length <= c.split.index) {
        values[reader.slot] = FAILED;
        return { column: c.name, reason: 'split', message: `${show(text)} has no part ${c.split.index + 1} when split at ${show(c.split.separator)}` };
      }
      text = this.#spec.trim ? parts[c.split.index]!.trim() : parts[c.split.index]!;
    }
    if (c.nullTokens.has(text)) {
      if (c.required) {
        values[reader.slot] = FAILED;
        return { column: c.name, reason: 'required', message: text === '' ? 'a value is required' : `a value is required (found the null token ${show(text)})` };
      }
      return null;
    }
    if (c.codelist) {
      const canonical = c.codelist.values.get(c.codelist.ignoreCase ? text.toLowerCase() : text);
      if (canonical === undefined) {
        values[reader.slot] = FAILED;
        return { column: c.name, reason: 'codelist', message: `${show(text)} is not in the codelist` };
      }
      text = canonical;
    }
    let value: unknown;
    switch (c.type) {
      case 'text':
        if (c.maxLength !== null && text.length > c.maxLength) {
          values[reader.slot] = FAILED;
          return { column: c.name, reason: 'too_long', message: `${text.length} characters; at most ${c.maxLength}` };
        }
        value = text;
        break;
      case 'integer':
        if (!INTEGER.test(text) || !Number.isSafeInteger(Number(text))) {
          values[reader.slot] = FAILED;
          return { column: c.name, reason: 'invalid_integer', message: `${show(text)} is not an integer` };
        }
        value = Number(text);
        break;
      case 'number': {
        const normal = c.decimalComma ? text.replace(',', '.') : text;
        if (!NUMBER.test(normal)) {
          values[reader.slot] = FAILED;
          return { column: c.name, reason: 'invalid_number', message: `${show(text)} is not a number` };
        }
        value = Number(normal);
        if (!Number.isFinite(value)) {
          values[reader.slot] = FAILED;
          return { column: c.name, reason: 'invalid_number', message: `${show(text)} is out of range` };
        }
        break;
      }
      case 'boolean': {
        const lower = text.toLowerCase();
        if (c.trueValues.has(lower)) value = true;
        else if (c.falseValues.has(lower)) value = false;
        else {
          values[reader.slot] = FAILED;
          return { column: c.name, reason: 'invalid_boolean', message: `${show(text)} is not a boolean` };
        }
        break;
      }
      case 'date': {
        let date: string | null = null;
        for (const parse of c.dates!) if ((date = parse(text)) !== null) break;
        if (date === null) {
          values[reader.slot] = FAILED;
          return { column: c.name, reason: 'invalid_date', message: `${show(text)} is not a date in the formats given` };
        }
        value = date;
        break;
      }
      case 'timestamp':
        value = parseTimestamp(text);
        if (value === null) {
          values[reader.slot] = FAILED;
          return { column: c.name, reason: 'invalid_timestamp', message: `${show(text)} is not an ISO 8601 timestamp` };
        }
        break;
    }
    if (c.unit) {
      let conversion = c.unit.fixed;
      if (reader.unitIndex !== -1) {
        const raw = this.#spec.trim ? fields[reader.unitIndex]!.trim() : fields[reader.unitIndex]!;
        if (raw === '' || c.nullTokens.has(raw)) {
          values[reader.slot] = FAILED;
          return { column: c.name, reason: 'missing_unit', message: `the value ${show(text)} has no unit` };
        }
        if (!c.unit.conversions.has(raw)) c.unit.conversions.set(raw, this.#conversion(c, raw));
        conversion = c.unit.conversions.get(raw)!;
        if (conversion === null) {
          values[reader.slot] = FAILED;
          const code = c.unit.map[raw] ?? raw;
          const reason = ucumProblem(code) ? 'unknown_unit' : 'unit_not_convertible';
          return { column: c.name, reason, message: reason === 'unknown_unit' ? `the unit ${show(raw)} is not UCUM and not in the spec's unit map` : `${show(code)} converts to none of ${c.unit.targets.join(', ')}` };
        }
      }
      value = (value as number) * conversion!.scale + conversion!.offset;
      if (reader.unitSlot !== -1) values[reader.unitSlot] = conversion!.to;
    }
    values[reader.slot] = value;
    return null;
  }

  #conversion(c: CompiledColumn, raw: string): Conversion | null {
    const code = c.unit!.map[raw] ?? raw;
    return ucumProblem(code) ? null : conversionTo(code, c.unit!.targets);
  }
}
