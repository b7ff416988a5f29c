// A chunk's records turned into COPY text, fast. Most records of most files are one line without
// quotes whose fields are plain: those are read in place (character codes, no field strings)
// and written straight into the COPY buffer. Anything else (a quote, a value to decode, a row
// that might be rejected) goes through the reference path, the string parser and `RowCleaner`,
// so both paths give the same rows, rejects and messages.
import { parseQuotedRecord, type ParsedRecord } from '../source/csv.ts';
import type { CompiledColumn, CompiledSpec } from '../spec/compile.ts';
import { RowCleaner, type Problem } from './clean.ts';
import { CopyOut } from './copy-out.ts';

export interface EncodeOptions {
  compiled: CompiledSpec;
  header: readonly string[];
  loadId: string;
  chunkNo: number;
  /** The source line of the chunk's first record. */
  firstLine: number;
  /** Each record starts with its line number (a prepared worksheet). */
  lineField: boolean;
  delimiter: string;
  quote: string | null;
  /** Every record the reference way (tests compare both paths). @default true */
  fastPath?: boolean;
}

export interface EncodeCounts {
  rowsIn: number;
  clean: number;
  rejected: number;
  blank: number;
}

// How a column is read on the fast path.
const Kind = { Generic: 0, Text: 1, Integer: 2, Number: 3, Boolean: 4 } as const;
type Kind = (typeof Kind)[keyof typeof Kind];

interface FastColumn {
  kind: Kind;
  /** The column's index in the spec (for `RowCleaner.readColumn`). */
  index: number;
  column: CompiledColumn;
  slot: number;
  unitSlot: number;
  /** Source fields the column reads (the first is its value). */
  sources: number[];
  nullTokens: string[];
  /** A rule reads it: its typed value is needed. */
  typed: boolean;
  /** The codelist's keys (lower-case when it ignores case) and their canonical values. */
  codeKeys: string[];
  codeValues: string[];
}

/**
 * A rule `column < | <= | > | >= number` on a numeric column, tested in plain JavaScript on the
 * fast path. CEL compares a number with a number literal as JavaScript does, and a NULL makes
 * it fail to evaluate (the rule does not apply). A row the quick test would reject goes the
 * reference way, which evaluates the rules with CEL and words the problem.
 */
interface QuickRule {
  slot: number;
  op: '<' | '<=' | '>' | '>=';
  limit: number;
  rejectWhen: boolean;
}
const QUICK_RULE = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(<=|>=|<|>)\s*([+-]?\d+(?:\.\d+)?)\s*$/;

/** The spec's rules as quick rules, or null when one of them is not that simple. */
function quickRules(compiled: CompiledSpec): QuickRule[] | null {
  const quick: QuickRule[] = [];
  for (const r of compiled.rules) {
    const m = QUICK_RULE.exec(r.rule.source);
    const slot = m ? compiled.targetColumns.findIndex((c) => c.name === m[1]) : -1;
    const type = compiled.targetColumns[slot]?.type;
    if (!m || (type !== 'number' && type !== 'integer')) return null;
    quick.push({ slot, op: m[2] as QuickRule['op'], limit: Number(m[3]), rejectWhen: r.rejectWhen });
  }
  return quick;
}

const isSpace = (c: number) => c === 32 || (c >= 9 && c <= 13);
const TAB = 0x09;
const LF = 0x0a;
const CR = 13;
// 10^k for k <= 22 is exact in a double.
const POW10 = Array.from({ length: 23 }, (_, k) => 10 ** k);

/** Whether characters `s..e` are blank as `String.prototype.trim` sees it. */
function blank(text: string, s: number, e: number): boolean {
  for (let i = s; i < e; i++) {
    const c = text.charCodeAt(i);
    if (isSpace(c)) continue;
    if (c < 0x80) return false;
    return text.slice(s, e).trim() === '';
  }
  return true;
}

/** Encodes one chunk's text: `run` until it returns false, taking the COPY blocks as they fill. */
export class ChunkEncoder {
  readonly counts: EncodeCounts = { rowsIn: 0, clean: 0, rejected: 0, blank: 0 };
  /** COPY text for the staging table: chunk, line, then the target columns. */
  readonly stage = new CopyOut();
  /** COPY text for etl_reject: one row per problem. */
  readonly rejects = new CopyOut(64 * 1024);
  readonly #text: string;
  readonly #o: EncodeOptions;
  readonly #cleaner: RowCleaner;
  readonly #columns: FastColumn[];
  readonly #hasRules: boolean;
  readonly #quickRules: QuickRule[] | null;
  readonly #fast: boolean;
  readonly #width: number;
  readonly #trim: boolean;
  readonly #delim: number;
  readonly #quote: number;
  readonly #filled: boolean[];
  #unfilled: number;
  #pos = 0;
  #line: number;
  #nextQuote: number;
  // Field boundaries of the current record (data fields; a line-number field is not one).
  readonly #fs: Int32Array;
  readonly #fe: Int32Array;
  // The source fields a generic column reads, as strings (sparse, reused).
  readonly #decoded: string[];
  readonly #values: unknown[];

  constructor(text: string, options: EncodeOptions) {
    this.#text = text;
    this.#o = options;
    this.#cleaner = new RowCleaner(options.compiled, options.header);
    this.#width = options.header.length;
    this.#trim = options.compiled.trim;
    this.#delim = options.delimiter.charCodeAt(0);
    this.#quote = options.quote === null ? -1 : options.quote.charCodeAt(0);
    this.#filled = new Array<boolean>(this.#width).fill(false);
    this.#unfilled = this.#width;
    this.#line = options.firstLine;
    this.#nextQuote = options.quote === null ? -1 : text.indexOf(options.quote, 0);
    this.#fs = new Int32Array(this.#width + 1);
    this.#fe = new Int32Array(this.#width + 1);
    this.#decoded = new Array<string>(this.#width).fill('');
    this.#values = new Array<unknown>(options.compiled.targetColumns.length).fill(null);
    this.#hasRules = options.compiled.rules.length > 0;
    this.#quickRules = quickRules(options.compiled);
    this.#fast = options.fastPath ?? true;
    const typed = this.#cleaner.ruleSlots;
    this.#columns = this.#cleaner.readers.map((reader, index) => {
      const c = reader.column;
      const plain = reader.indices.length === 1 && reader.indices[0]! >= 0 && !c.split && !c.unit;
      let kind: Kind = Kind.Generic;
      if (plain) {
        if (c.type === 'text') kind = Kind.Text;
        else if (!c.codelist && c.type === 'integer') kind = Kind.Integer;
        else if (!c.codelist && c.type === 'number') kind = Kind.Number;
        else if (!c.codelist && c.type === 'boolean') kind = Kind.Boolean;
      }
      return {
        kind,
        index,
        column: c,
        slot: reader.slot,
        unitSlot: reader.unitSlot,
        sources: [...reader.indices, ...(reader.unitIndex === -1 ? [] : [reader.unitIndex])],
        nullTokens: [...c.nullTokens],
        typed: typed.has(reader.slot) || (reader.unitSlot !== -1 && typed.has(reader.unitSlot)),
        codeKeys: c.codelist ? [...c.codelist.values.keys()] : [],
        codeValues: c.codelist ? [...c.codelist.values.values()] : [],
      };
    });
  }

  /** Source columns with at least one value in the records read so far. */
  get filled(): number[] {
    return this.#filled.flatMap((f, i) => (f ? [i] : []));
  }

  /**
   * Encodes records until a staging block is full or the text ends. Returns false once every
   * record is encoded (the last blocks are then in `stage.take(true)`).
   */
  run(): boolean {
    const text = this.#text;
    const n = text.length;
    const q = this.#o.quote;
    const stage = this.stage;
    while (this.#pos < n) {
      if (stage.ready > 0) return true;
      const pos = this.#pos;
      let nl = text.indexOf('\n', pos);
      if (nl === -1) nl = n;
      if (this.#nextQuote !== -1 && this.#nextQuote < pos) this.#nextQuote = text.indexOf(q!, pos);
      if (this.#nextQuote === -1 || this.#nextQuote > nl) {
        const end = nl > pos && text.charCodeAt(nl - 1) === CR ? nl - 1 : nl;
        if (this.#fast) this.#plainRecord(pos, end);
        else this.#slowPlain(pos, end);
        this.#line++;
        this.#pos = nl + 1;
        continue;
      }
      this.#pos = parseQuotedRecord(text, pos, this.#o.delimiter, q!, (record) => {
        this.#record(record.fields, record);
        this.#line += record.lines;
      });
    }
    return false;
  }

  /** A one-line record without quotes, characters `start..end`. */
  #plainRecord(start: number, end: number): void {
    const text = this.#text;
    const d = this.#delim;
    const fs = this.#fs;
    const fe = this.#fe;
    let line = this.#line;
    let from = start;
    if (this.#o.lineField) {
      let k = from;
      while (k < end && text.charCodeAt(k) !== d) k++;
      line = Number(text.slice(from, k));
      from = k < end ? k + 1 : end;
      if (k === end) return this.#slowPlain(start, end);
    }
    // Split at delimiters; more fields than the header's goes the slow way (a reject).
    let count = 0;
    let s = from;
    for (let i = from; i < end; i++) {
      if (text.charCodeAt(i) === d) {
        if (count === this.#width) return this.#slowPlain(start, end);
        fs[count] = s;
        fe[count++] = i;
        s = i + 1;
      }
    }
    if (count === this.#width) return this.#slowPlain(start, end);
    fs[count] = s;
    fe[count++] = end;
    if (count !== this.#width) return this.#slowPlain(start, end);

    this.counts.rowsIn++;
    let allBlank = true;
    for (let k = 0; k < count; k++) {
      if (!blank(text, fs[k]!, fe[k]!)) {
        allBlank = false;
        break;
      }
    }
    if (allBlank) {
      this.counts.blank++;
      return;
    }
    if (this.#unfilled > 0) this.#fill(count);

    const out = this.stage;
    out.beginRow();
    out.uint(this.#o.chunkNo);
    out.byte(TAB);
    out.uint(line);
    for (const col of this.#columns) {
      out.byte(TAB);
      if (!this.#fastColumn(col, out)) {
        out.dropRow();
        this.counts.rowsIn--;
        return this.#slowPlain(start, end);
      }
    }
    if (this.#hasRules && (this.#quickRules ? this.#quickRejects(this.#quickRules) : this.#cleaner.ruleProblems(this.#values, null) !== null)) {
      out.dropRow();
      this.counts.rowsIn--;
      return this.#slowPlain(start, end);
    }
    out.byte(LF);
    this.counts.clean++;
  }

  /** Whether a quick rule rejects the row (or cannot tell: a value that is not a number). */
  #quickRejects(rules: readonly QuickRule[]): boolean {
    const values = this.#values;
    for (const r of rules) {
      const v = values[r.slot];
      if (v === null) continue;
      if (typeof v !== 'number') return true;
      const outcome = r.op === '<' ? v < r.limit : r.op === '<=' ? v <= r.limit : r.op === '>' ? v > r.limit : v >= r.limit;
      if (outcome === r.rejectWhen) return true;
    }
    return false;
  }

  #fill(count: number): void {
    const text = this.#text;
    for (let i = 0; i < count; i++) {
      if (!this.#filled[i] && !blank(text, this.#fs[i]!, this.#fe[i]!)) {
        this.#filled[i] = true;
        this.#unfilled--;
      }
    }
  }

  /**
   * Writes one column of the current record when it is clean; false when it is not (or might
   * not be: the reference path decides and says why).
   */
  #fastColumn(col: FastColumn, out: CopyOut): boolean {
    const text = this.#text;
    if (col.kind === Kind.Generic) return this.#genericColumn(col, out);
    const src = col.sources[0]!;
    let s = this.#fs[src]!;
    let e = this.#fe[src]!;
    if (this.#trim) {
      while (s < e && isSpace(text.charCodeAt(s))) s++;
      while (e > s && isSpace(text.charCodeAt(e - 1))) e--;
      // Around a non-ASCII character there may be Unicode spaces to trim: the reference reads it.
      if (s < e && (text.charCodeAt(s) >= 0x80 || text.charCodeAt(e - 1) >= 0x80)) return this.#genericColumn(col, out);
    }
    const len = e - s;
    for (const token of col.nullTokens) {
      if (token.length === len && text.startsWith(token, s)) {
        if (col.column.required) return false;
        out.nullValue();
        if (col.typed) this.#values[col.slot] = null;
        return true;
      }
    }
    const c = col.column;
    if (len === 0 && col.kind !== Kind.Text) return this.#genericColumn(col, out);
    switch (col.kind) {
      case Kind.Text: {
        if (c.codelist) {
          // Found in place (no string for the value) when it is ASCII; the map lookup otherwise.
          const found = codeIndex(text, s, e, col.codeKeys, c.codelist.ignoreCase);
          if (found >= 0) {
            const canonical = col.codeValues[found]!;
            if (c.maxLength !== null && canonical.length > c.maxLength) return false;
            out.text(canonical);
            if (col.typed) this.#values[col.slot] = canonical;
            return true;
          }
          if (found === -1) return false;
          const value = text.slice(s, e);
          const canonical = c.codelist.values.get(c.codelist.ignoreCase ? value.toLowerCase() : value);
          if (canonical === undefined || (c.maxLength !== null && canonical.length > c.maxLength)) return false;
          out.text(canonical);
          if (col.typed) this.#values[col.slot] = canonical;
          return true;
        }
        if (c.maxLength !== null && len > c.maxLength) return false;
        out.textRange(text, s, e);
        if (col.typed) this.#values[col.slot] = text.slice(s, e);
        return true;
      }
      case Kind.Integer: {
        let i = s;
        let sign = 1;
        const first = text.charCodeAt(i);
        if (first === 0x2b || first === 0x2d) {
          if (first === 0x2d) sign = -1;
          i++;
        }
        if (i === e || e - i > 15) return this.#genericColumn(col, out);
        let m = 0;
        for (; i < e; i++) {
          const digit = text.charCodeAt(i) - 0x30;
          if (digit < 0 || digit > 9) return false;
          m = m * 10 + digit;
        }
        out.textRange(text, s, e);
        if (col.typed) this.#values[col.slot] = sign * m;
        return true;
      }
      case Kind.Number: {
        // [+-]? (digits [. digits?] | . digits), no exponent, at most 15 digits: the value is
        // m / 10^k exactly rounded, as Number() reads it. Anything else: the reference path.
        let i = s;
        let sign = 1;
        const first = text.charCodeAt(i);
        if (first === 0x2b || first === 0x2d) {
          if (first === 0x2d) sign = -1;
          i++;
        }
        let m = 0;
        let digits = 0;
        let intDigits = 0;
        let point = -1;
        for (; i < e; i++) {
          const ch = text.charCodeAt(i);
          const digit = ch - 0x30;
          if (digit >= 0 && digit <= 9) {
            m = m * 10 + digit;
            digits++;
            if (point === -1) intDigits++;
          } else if (point === -1 && (ch === 0x2e || (ch === 0x2c && c.decimalComma))) {
            point = i;
          } else if (ch === 0x65 || ch === 0x45) {
            return this.#genericColumn(col, out);
          } else return false;
        }
        if (digits === 0) return false;
        if (digits > 15) return this.#genericColumn(col, out);
        if (m === 0) {
          // Zero, whatever its sign or digits: written as the reference writes it.
          out.byte(0x30);
        } else if (point !== -1 && text.charCodeAt(point) === 0x2c) {
          out.textRange(text, s, point);
          out.byte(0x2e);
          out.textRange(text, point + 1, e);
        } else out.textRange(text, s, e);
        if (col.typed) this.#values[col.slot] = (sign * m) / POW10[digits - intDigits]!;
        return true;
      }
      case Kind.Boolean: {
        let value: boolean;
        if (matchesLower(text, s, e, c.trueValues)) value = true;
        else if (matchesLower(text, s, e, c.falseValues)) value = false;
        else return this.#genericColumn(col, out);
        out.byte(value ? 0x74 : 0x66);
        if (col.typed) this.#values[col.slot] = value;
        return true;
      }
    }
    return false;
  }

  /** A column read by the reference code from its source fields as strings. */
  #genericColumn(col: FastColumn, out: CopyOut): boolean {
    const text = this.#text;
    for (const i of col.sources) this.#decoded[i] = text.slice(this.#fs[i]!, this.#fe[i]!);
    const values = this.#values;
    values[col.slot] = null;
    if (col.unitSlot !== -1) values[col.unitSlot] = null;
    if (this.#cleaner.readColumn(col.index, this.#decoded, values) !== null) return false;
    out.value(values[col.slot]);
    if (col.unitSlot !== -1) {
      out.byte(TAB);
      out.value(values[col.unitSlot]);
    }
    return true;
  }

  /** A one-line record without quotes, the reference way. */
  #slowPlain(start: number, end: number): void {
    this.#record(this.#text.slice(start, end).split(this.#o.delimiter), { start, end, problem: null });
  }

  /** A record the reference way: the string parser's fields and `RowCleaner.clean`. */
  #record(parsed: string[], record: Pick<ParsedRecord, 'start' | 'end' | 'problem'>): void {
    const text = this.#text;
    let fields = parsed;
    let recordLine = this.#line;
    let rawStart = record.start;
    if (this.#o.lineField) {
      recordLine = Number(fields[0]);
      rawStart = record.start + fields[0]!.length + 1;
      fields = fields.slice(1);
    }
    this.counts.rowsIn++;
    if (fields.every((f) => f.trim() === '')) {
      this.counts.blank++;
      return;
    }
    if (this.#unfilled > 0) {
      for (let i = 0; i < this.#width && i < fields.length; i++) {
        if (!this.#filled[i] && fields[i]!.trim() !== '') {
          this.#filled[i] = true;
          this.#unfilled--;
        }
      }
    }
    const result = record.problem
      ? { values: null, problems: [{ column: null, reason: 'malformed', message: record.problem }] as Problem[] }
      : this.#cleaner.clean(fields);
    if (result.values) {
      this.counts.clean++;
      const out = this.stage;
      out.beginRow();
      out.uint(this.#o.chunkNo);
      out.byte(TAB);
      out.uint(recordLine);
      for (const v of result.values) {
        out.byte(TAB);
        out.value(v);
      }
      out.byte(LF);
      return;
    }
    this.counts.rejected++;
    const raw = text.slice(rawStart, record.end);
    const out = this.rejects;
    for (const p of result.problems!) {
      out.beginRow();
      out.text(this.#o.loadId);
      out.byte(TAB);
      out.uint(this.#o.chunkNo);
      out.byte(TAB);
      out.uint(recordLine);
      for (const v of [p.column, p.reason, p.message, raw]) {
        out.byte(TAB);
        out.value(v);
      }
      out.byte(LF);
    }
  }
}

/**
 * Which of `keys` characters `s..e` are (lower-cased first when `ignoreCase`; the keys are then
 * lower-case already): its index, -1 for none, -2 when the text is not ASCII (lower-casing
 * beyond ASCII is left to `toLowerCase`).
 */
function codeIndex(text: string, s: number, e: number, keys: readonly string[], ignoreCase: boolean): number {
  const len = e - s;
  for (let i = s; i < e; i++) if (text.charCodeAt(i) >= 0x80) return -2;
  outer: for (let k = 0; k < keys.length; k++) {
    const key = keys[k]!;
    if (key.length !== len) continue;
    for (let j = 0; j < len; j++) {
      let c = text.charCodeAt(s + j);
      if (ignoreCase && c >= 0x41 && c <= 0x5a) c += 32;
      if (c !== key.charCodeAt(j)) continue outer;
    }
    return k;
  }
  return -1;
}

/** Whether characters `s..e` lower-cased are one of `values` (lower-case already); ASCII only. */
function matchesLower(text: string, s: number, e: number, values: ReadonlySet<string>): boolean {
  const len = e - s;
  outer: for (const v of values) {
    if (v.length !== len) continue;
    for (let k = 0; k < len; k++) {
      let c = text.charCodeAt(s + k);
      if (c >= 0x80) continue outer;
      if (c >= 0x41 && c <= 0x5a) c += 32;
      if (c !== v.charCodeAt(k)) continue outer;
    }
    return true;
  }
  return false;
}
