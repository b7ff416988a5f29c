// A chunk's records turned into COPY text, fast. Most records of most files are one line without
// quotes whose fields are plain: those are read in place from the chunk's bytes (one table
// lookup per byte finds the fields; no string for the record or its fields) and written straight
// into the COPY buffer. Anything else (a quote, a value to decode, a row that might be rejected,
// bytes that are not UTF-8) goes through the reference path, the string parser and
// `RowCleaner`, so both paths give the same rows, rejects and messages.
import { isAscii, isUtf8 } from 'node:buffer';
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
  /** Source fields the column reads (the first is its value), as the header counts them. */
  sources: number[];
  /** Where its value is among a record's fields (after the line number, when there is one). */
  field: number;
  required: boolean;
  maxLength: number | null;
  decimalComma: boolean;
  /** The null tokens as UTF-8. */
  nullTokens: WordSet;
  /** A rule reads it: its typed value is needed. */
  typed: boolean;
  /** The codelist's keys as UTF-8 (lower-case when it ignores case), their canonical values as strings and as COPY text, and whether each is over maxLength. */
  codeKeys: WordSet;
  codeValues: string[];
  codeCopy: Uint8Array[];
  codeTooLong: boolean[];
  /** A boolean's words, lower-case, true ones first, and how many are true. */
  booleanWords: WordSet;
  trueWords: number;
  /** Quick rules on this column's value, tested as it is read (an integer or number column). */
  rules: QuickRule[];
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

/** Whether one of `rules` (all on one column) rejects its value `v`. */
function quickRejects(rules: readonly QuickRule[], v: number): boolean {
  for (let k = 0; k < rules.length; k++) {
    const r = rules[k]!;
    const outcome = r.op === '<' ? v < r.limit : r.op === '<=' ? v <= r.limit : r.op === '>' ? v > r.limit : v >= r.limit;
    if (outcome === r.rejectWhen) return true;
  }
  return false;
}

const isSpace = (c: number) => c === 32 || (c >= 9 && c <= 13);
const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;
const BACKSLASH = 0x5c;
// 10^k for k <= 22 is exact in a double.
const POW10 = Array.from({ length: 23 }, (_, k) => 10 ** k);

// What a fast column reader answers besides the next write position.
const SLOW = -1; // the reference path decides the row (a reject, or maybe one)
const GENERIC = -2; // the reference code reads this column

/** A string as COPY text bytes (escaped, UTF-8). */
function copyText(value: string): Uint8Array {
  const out = new CopyOut(64);
  out.text(value);
  return Buffer.concat(out.take(true));
}

/** Whether bytes `s..e` are (ASCII-lower-cased first when `lower`) exactly `word`. */
function sameBytes(src: Uint8Array, s: number, e: number, word: Uint8Array, lower: boolean): boolean {
  if (word.length !== e - s) return false;
  for (let j = 0; j < word.length; j++) {
    let c = src[s + j]!;
    if (lower && c >= 0x41 && c <= 0x5a) c += 32;
    if (c !== word[j]) return false;
  }
  return true;
}

/**
 * Words to find a field among (a codelist's keys, a boolean's words), ASCII-lower-cased first
 * when `lower`: a table by length and first byte names the one word to compare with, so a
 * field is compared with one word at most (with each only when several share both).
 */
class WordSet {
  readonly words: readonly Uint8Array[];
  readonly #lower: boolean;
  // (length * 256 + first byte) -> index + 1, 0 for none, -1 for several.
  readonly #table = new Int32Array(32 * 256);
  // A bit for each length under 31 bytes a word has (most fields have none of them).
  readonly #lengths: number;

  constructor(words: readonly Uint8Array[], lower: boolean) {
    this.words = words;
    this.#lower = lower;
    this.#lengths = words.reduce((mask, w) => (w.length < 31 ? mask | (1 << w.length) : mask), 0);
    words.forEach((w, k) => {
      if (w.length === 0 || w.length >= 32) return;
      const at = w.length * 256 + w[0]!;
      this.#table[at] = this.#table[at] === 0 ? k + 1 : -1;
    });
  }

  /** Which word bytes `s..e` are: its index, or -1. */
  find(src: Uint8Array, s: number, e: number): number {
    const len = e - s;
    if (len < 31 && ((this.#lengths >>> len) & 1) === 0) return -1;
    if (len > 0 && len < 32) {
      let first = src[s]!;
      if (this.#lower && first >= 0x41 && first <= 0x5a) first += 32;
      const entry = this.#table[len * 256 + first]!;
      if (entry === 0) return -1;
      if (entry > 0) return sameBytes(src, s, e, this.words[entry - 1]!, this.#lower) ? entry - 1 : -1;
    }
    for (let k = 0; k < this.words.length; k++) if (sameBytes(src, s, e, this.words[k]!, this.#lower)) return k;
    return -1;
  }
}

function hasNonAscii(src: Uint8Array, s: number, e: number): boolean {
  for (let i = s; i < e; i++) if (src[i]! >= 0x80) return true;
  return false;
}

// What the last integer, number or boolean read was (1 for true; numbers only when asked for),
// and the last word found: the readers below answer the next write position, and leave these
// for the rules and typed values (a double in a typed array, not a new heap number each time).
const lastValue = new Float64Array(1);
let lastWord = -1;

/** 1 when a number's first byte is its sign (`+` or `-`), else 0. */
const signLength = (first: number): number => (first === 0x2b || first === 0x2d ? 1 : 0);

/** An integer (`[+-]?digits`, at most 15 of them) written as it is: the next position, SLOW or GENERIC. */
function writeInteger(src: Uint8Array, s: number, e: number, buf: Uint8Array, p: number): number {
  let i = s + signLength(src[s]!);
  const sign = src[s] === 0x2d ? -1 : 1;
  if (i === e || e - i > 15) return GENERIC;
  let m = 0;
  for (; i < e; i++) {
    const digit = src[i]! - 0x30;
    if (digit < 0 || digit > 9) return SLOW;
    m = m * 10 + digit;
  }
  lastValue[0] = sign * m;
  return copyField(src, s, e, buf, p, false);
}

/**
 * A number `[+-]? (digits [. digits?] | . digits)`, no exponent, at most 15 digits: its value is
 * m / 10^k exactly rounded, as Number() reads it. Written as it is (a decimal comma as a point,
 * zero as 0, as the reference writes them): the next position; SLOW or GENERIC otherwise.
 */
function writeDecimal(src: Uint8Array, s: number, e: number, buf: Uint8Array, p: number, decimalComma: boolean, needValue: boolean): number {
  let i = s + signLength(src[s]!);
  const sign = src[s] === 0x2d ? -1 : 1;
  let m = 0;
  let digits = 0;
  let intDigits = 0;
  let point = -1;
  for (; i < e; i++) {
    const ch = src[i]!;
    const digit = ch - 0x30;
    if (digit >= 0 && digit <= 9) {
      m = m * 10 + digit;
      digits++;
      if (point === -1) intDigits++;
    } else if (point === -1 && (ch === 0x2e || (ch === 0x2c && decimalComma))) {
      point = i;
    } else if (ch === 0x65 || ch === 0x45) {
      return GENERIC;
    } else return SLOW;
  }
  if (digits === 0) return SLOW;
  if (digits > 15) return GENERIC;
  if (needValue) lastValue[0] = (sign * m) / POW10[digits - intDigits]!;
  if (m === 0) {
    buf[p] = 0x30;
    return p + 1;
  }
  if (point !== -1 && src[point] === 0x2c) {
    p = copyField(src, s, point, buf, p, false);
    buf[p++] = 0x2e;
    return copyField(src, point + 1, e, buf, p, false);
  }
  return copyField(src, s, e, buf, p, false);
}

/** A codelist value, found in place when it is ASCII: its canonical value written; SLOW or GENERIC otherwise. */
function writeCode(col: FastColumn, src: Uint8Array, s: number, e: number, buf: Uint8Array, p: number, nonAscii: boolean): number {
  // Non-ASCII is lower-cased by `toLowerCase`: the reference reads it.
  if (nonAscii && hasNonAscii(src, s, e)) return GENERIC;
  const found = col.codeKeys.find(src, s, e);
  if (found === -1 || col.codeTooLong[found]) return SLOW;
  const copy = col.codeCopy[found]!;
  for (let j = 0; j < copy.length; j++) buf[p++] = copy[j]!;
  lastWord = found;
  return p;
}

/** A boolean's word written as t or f; GENERIC for anything else (the reference reads it). */
function writeBoolean(col: FastColumn, src: Uint8Array, s: number, e: number, buf: Uint8Array, p: number, nonAscii: boolean): number {
  // Lower-casing beyond ASCII is left to `toLowerCase`.
  if (nonAscii && hasNonAscii(src, s, e)) return GENERIC;
  const found = col.booleanWords.find(src, s, e);
  if (found === -1) return GENERIC;
  const value = found < col.trueWords;
  lastValue[0] = value ? 1 : 0;
  buf[p] = value ? 0x74 : 0x66;
  return p + 1;
}

/** Bytes `s..e` copied into `buf` at `p`, escaped for COPY text when `escape`; the next position. */
function copyField(src: Uint8Array, s: number, e: number, buf: Uint8Array, p: number, escape: boolean): number {
  if (!escape) {
    if (e - s > 64) {
      buf.set(src.subarray(s, e), p);
      return p + e - s;
    }
    for (let i = s; i < e; i++) buf[p++] = src[i]!;
    return p;
  }
  for (let i = s; i < e; i++) {
    const c = src[i]!;
    if (c === BACKSLASH || c === TAB || c === LF || c === CR) {
      buf[p++] = BACKSLASH;
      buf[p++] = c === BACKSLASH ? BACKSLASH : c === TAB ? 0x74 : c === LF ? 0x6e : 0x72;
    } else buf[p++] = c;
  }
  return p;
}

/** A non-negative safe integer in decimal into `buf` at `p`; the next position. */
function putUint(buf: Uint8Array, p: number, n: number): number {
  let digits = 1;
  for (let x = 10; x <= n && digits < 16; x *= 10) digits++;
  const end = p + digits;
  for (let q = end; q > p; ) {
    buf[--q] = 0x30 + (n % 10);
    n = Math.floor(n / 10);
  }
  return end;
}

/**
 * Where the record that starts with a quoted field at `start` ends (the next record's start),
 * read as the planner's `RecordScanner` reads it.
 */
function quotedRecordEnd(src: Uint8Array, start: number, d: number, q: number): number {
  const FieldStart = 0;
  const Unquoted = 1;
  const Quoted = 2;
  const QuoteInQuoted = 3;
  let state = FieldStart;
  for (let i = start; i < src.length; i++) {
    const b = src[i]!;
    if (state === Quoted) {
      if (b === q) state = QuoteInQuoted;
      continue;
    }
    if (b === LF) return i + 1;
    if (b === d) state = FieldStart;
    else if (state === FieldStart) state = b === q ? Quoted : b === CR ? FieldStart : Unquoted;
    else if (state === QuoteInQuoted) state = b === q ? Quoted : b === CR ? QuoteInQuoted : Unquoted;
  }
  return src.length;
}

/** Encodes one chunk's bytes: `run` until it returns false, taking the COPY blocks as they fill. */
export class ChunkEncoder {
  readonly counts: EncodeCounts = { rowsIn: 0, clean: 0, rejected: 0, blank: 0 };
  /** COPY text for the staging table: chunk, line, then the target columns. */
  readonly stage = new CopyOut();
  /** COPY text for etl_reject: one row per problem. */
  readonly rejects = new CopyOut(64 * 1024);
  readonly #src: Buffer;
  /** The chunk as text, when its delimiter or quote is not ASCII (read the reference way). */
  readonly #text: string | null;
  readonly #o: EncodeOptions;
  readonly #cleaner: RowCleaner;
  readonly #columns: FastColumn[];
  readonly #hasRules: boolean;
  readonly #quickRules: QuickRule[] | null;
  /** The quick rules not tested as their column is read. */
  readonly #laterRules: QuickRule[] | null;
  readonly #fast: boolean;
  readonly #width: number;
  /** 1 when each record starts with its line number, else 0: where the data fields start. */
  readonly #base: number;
  readonly #trim: boolean;
  readonly #delimiter: number;
  /** The quote's byte, -1 for none. */
  readonly #quote: number;
  readonly #ascii: boolean;
  readonly #utf8: boolean;
  /** The last line number written, in ASCII digits. */
  readonly #lineDigits = new Uint8Array(20);
  #digitsLength = 0;
  #digitsOf = -1;
  /** `<chunk number>\t`, every staging row's start. */
  readonly #prefix: Uint8Array;
  /** Bytes a fast row can take beyond twice its record's length. */
  readonly #rowSlack: number;
  /** The most fast columns that read the same field. */
  readonly #fieldUses: number;
  readonly #filled: boolean[];
  #unfilled: number;
  #pos = 0;
  #line: number;
  /** Where the next quote is (in `#text` when reading it; -1 there: none). */
  #nextQuote = -1;
  // Where the next backslash, tab and CR are.
  #nextBackslash = -1;
  #nextTab = -1;
  #nextReturn = -1;
  // Field boundaries of the current record (the line-number field first, when there is one).
  readonly #fs: Int32Array;
  readonly #fe: Int32Array;
  // The source fields a generic column reads, as strings (sparse, reused).
  readonly #decoded: string[];
  readonly #values: unknown[];

  constructor(src: Buffer, options: EncodeOptions) {
    this.#src = src;
    this.#o = options;
    this.#cleaner = new RowCleaner(options.compiled, options.header);
    this.#width = options.header.length;
    this.#base = options.lineField ? 1 : 0;
    this.#trim = options.compiled.trim;
    const d = options.delimiter.charCodeAt(0);
    const q = options.quote === null ? -1 : options.quote.charCodeAt(0);
    // Delimiters and quotes outside ASCII (or odd ones) are left to the string parser.
    const byteSyntax = d < 0x80 && d !== LF && d !== CR && d !== q && q < 0x80 && q !== LF && q !== CR && q !== d;
    this.#text = byteSyntax ? null : src.toString('utf8');
    if (this.#text !== null && q !== -1) this.#nextQuote = this.#text.indexOf(options.quote!);
    this.#delimiter = d;
    this.#quote = q;
    // Checked once for the chunk (natively): records of a chunk that is not all UTF-8 are
    // checked one by one, and only a chunk with non-ASCII text has fields to look into for it.
    this.#ascii = isAscii(src);
    this.#utf8 = this.#ascii || isUtf8(src);
    this.#prefix = Buffer.from(`${options.chunkNo}\t`);
    this.#filled = new Array<boolean>(this.#width).fill(false);
    this.#unfilled = this.#width;
    this.#line = options.firstLine;
    this.#fs = new Int32Array(this.#width + this.#base + 1);
    this.#fe = new Int32Array(this.#width + this.#base + 1);
    this.#decoded = new Array<string>(this.#width).fill('');
    this.#values = new Array<unknown>(options.compiled.targetColumns.length).fill(null);
    this.#hasRules = options.compiled.rules.length > 0;
    this.#quickRules = quickRules(options.compiled);
    this.#fast = options.fastPath ?? true;
    // Quick rules on a fast integer or number column are tested as the value is read; the
    // others (on a column the reference code reads) once the row is read, from `#values`.
    const inline = (slot: number) => this.#cleaner.readers.some((r) => r.slot === slot && r.indices.length === 1 && r.indices[0]! >= 0 && !r.column.split && !r.column.unit && !r.column.codelist && (r.column.type === 'integer' || r.column.type === 'number'));
    this.#laterRules = this.#quickRules?.filter((r) => !inline(r.slot)) ?? null;
    // The rules' values, in `#values`: those CEL reads, or the quick rules tested once the row is read.
    const typed = this.#quickRules ? new Set(this.#laterRules!.map((r) => r.slot)) : this.#cleaner.ruleSlots;
    const bytes = (values: Iterable<string>) => [...values].map((v) => Buffer.from(v, 'utf8'));
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
      const codeValues = c.codelist ? [...c.codelist.values.values()] : [];
      const nullTokens = bytes(c.nullTokens);
      return {
        kind,
        index,
        column: c,
        slot: reader.slot,
        unitSlot: reader.unitSlot,
        sources: [...reader.indices, ...(reader.unitIndex === -1 ? [] : [reader.unitIndex])],
        field: reader.indices[0]! + this.#base,
        required: c.required,
        maxLength: c.maxLength,
        decimalComma: c.decimalComma,
        nullTokens: new WordSet(nullTokens, false),
        typed: typed.has(reader.slot) || (reader.unitSlot !== -1 && typed.has(reader.unitSlot)),
        codeKeys: new WordSet(c.codelist ? bytes(c.codelist.values.keys()) : [], c.codelist?.ignoreCase ?? false),
        codeValues,
        codeCopy: codeValues.map(copyText),
        codeTooLong: codeValues.map((v) => c.maxLength !== null && v.length > c.maxLength),
        booleanWords: new WordSet([...bytes(c.trueValues), ...bytes(c.falseValues)], true),
        trueWords: c.trueValues.size,
        rules: kind === Kind.Integer || kind === Kind.Number ? (this.#quickRules ?? []).filter((r) => r.slot === reader.slot) : [],
      };
    });
    // A fast row: its prefix and line number, then per column a tab and at most twice its field
    // (escaped), a NULL, or a codelist's canonical value (escaped).
    this.#rowSlack = 32 + this.#columns.reduce((sum, c) => sum + 4 + Math.max(0, ...c.codeCopy.map((v) => v.length)), 0);
    // A field two columns read is written twice.
    const uses = new Map<number, number>();
    for (const c of this.#columns) if (c.kind !== Kind.Generic) uses.set(c.field, (uses.get(c.field) ?? 0) + 1);
    this.#fieldUses = Math.max(1, ...uses.values());
  }

  /** Source columns with at least one value in the records read so far. */
  get filled(): number[] {
    return this.#filled.flatMap((f, i) => (f ? [i] : []));
  }

  /**
   * Encodes records until a staging block is full or the chunk ends. Returns false once every
   * record is encoded (the last blocks are then in `stage.take(true)`).
   */
  run(): boolean {
    if (this.#text !== null) return this.#runText(this.#text);
    const src = this.#src;
    const n = src.length;
    const d = this.#delimiter;
    const fs = this.#fs;
    const fe = this.#fe;
    const fields = this.#width + this.#base;
    const stage = this.stage;
    while (this.#pos < n) {
      if (stage.ready > 0) return true;
      const pos = this.#pos;
      // The record's fields and its line end, in one pass over its bytes (two comparisons a
      // byte; what else a record holds is looked up natively, once per occurrence).
      let count = 0;
      let s = pos;
      let i = pos;
      for (; i < n; i++) {
        const b = src[i]!;
        if (b === d) {
          if (count < fields) {
            fs[count] = s;
            fe[count] = i;
          }
          count++;
          s = i + 1;
        } else if (b === LF) break;
      }
      if (this.#nextQuote < pos) this.#nextQuote = this.#find(this.#quote, pos);
      if (this.#nextQuote < i) {
        this.#pos = this.#quotedRecord(pos);
        continue;
      }
      // CR LF ends a record as LF does (so does a CR that ends the file); any other CR is data.
      const end = i > pos && src[i - 1] === CR ? i - 1 : i;
      if (count < fields) {
        fs[count] = s;
        fe[count] = end;
      }
      count++;
      this.#pos = i + 1;
      if (this.#fast && count === fields && (this.#utf8 || isUtf8(src.subarray(pos, end)))) this.#plainRecord(pos, end, this.#escapes(pos, end));
      else this.#slowPlain(pos, end);
      this.#line++;
    }
    return false;
  }

  /** Where `byte` next is from `from` (the chunk's length when nowhere). */
  #find(byte: number, from: number): number {
    if (byte === -1) return this.#src.length;
    const at = this.#src.indexOf(byte, from);
    return at === -1 ? this.#src.length : at;
  }

  /** Whether bytes `start..end` (a record) hold a byte COPY text escapes: a backslash, a tab, a CR. */
  #escapes(start: number, end: number): boolean {
    if (this.#nextBackslash < start) this.#nextBackslash = this.#find(BACKSLASH, start);
    if (this.#nextBackslash < end) return true;
    if (this.#nextTab < start) this.#nextTab = this.#find(this.#delimiter === TAB ? -1 : TAB, start);
    if (this.#nextTab < end) return true;
    if (this.#nextReturn < start) this.#nextReturn = this.#find(CR, start);
    return this.#nextReturn < end;
  }

  /** The whole chunk the reference way, from its text (a delimiter or quote outside ASCII). */
  #runText(text: string): boolean {
    const n = text.length;
    const q = this.#o.quote;
    const stage = this.stage;
    while (this.#pos < n) {
      if (stage.ready > 0) return true;
      const pos = this.#pos;
      let nl = text.indexOf('\n', pos);
      if (nl === -1) nl = n;
      if (q !== null && this.#nextQuote !== -1 && this.#nextQuote < pos) this.#nextQuote = text.indexOf(q, pos);
      if (this.#nextQuote === -1 || this.#nextQuote > nl) {
        const end = nl > pos && text.charCodeAt(nl - 1) === CR ? nl - 1 : nl;
        this.#record(text, text.slice(pos, end).split(this.#o.delimiter), pos, end, null);
        this.#line++;
        this.#pos = nl + 1;
        continue;
      }
      this.#pos = parseQuotedRecord(text, pos, this.#o.delimiter, q!, (record) => {
        this.#record(text, record.fields, record.start, record.end, record.problem);
        this.#line += record.lines;
      });
    }
    return false;
  }

  /** A one-line record without quotes, bytes `start..end`, its fields found (valid UTF-8). */
  #plainRecord(start: number, end: number, escape: boolean): void {
    const src = this.#src;
    const fs = this.#fs;
    const fe = this.#fe;
    const base = this.#base;
    let line = this.#line;
    if (base === 1) line = this.#lineNumber(fs[0]!, fe[0]!);

    this.counts.rowsIn++;
    let allBlank = true;
    for (let k = base; k < base + this.#width; k++) {
      if (!this.#blank(fs[k]!, fe[k]!)) {
        allBlank = false;
        break;
      }
    }
    if (allBlank) {
      this.counts.blank++;
      return;
    }
    if (this.#unfilled > 0) this.#fill();

    const out = this.stage;
    out.beginRow();
    const room = this.#rowSlack + 2 * (end - start) * this.#fieldUses;
    out.ensure(room);
    let buf = out.buffer;
    let p = out.position;
    const prefix = this.#prefix;
    for (let k = 0; k < prefix.length; k++) buf[p++] = prefix[k]!;
    if (Number.isSafeInteger(line) && line >= 0) {
      // The next line's digits are the last one's plus one, most of the time.
      const digits = this.#lineDigits;
      if (line === this.#digitsOf + 1 && this.#digitsOf >= 0) {
        let k = this.#digitsLength - 1;
        while (k >= 0 && digits[k] === 0x39) digits[k--] = 0x30;
        if (k >= 0) digits[k]!++;
        else {
          digits.copyWithin(1, 0, this.#digitsLength);
          digits[0] = 0x31;
          this.#digitsLength++;
        }
      } else this.#digitsLength = putUint(digits, 0, line);
      this.#digitsOf = line;
      for (let k = 0; k < this.#digitsLength; k++) buf[p++] = digits[k]!;
    } else {
      // A worksheet's line field that is not a row number: written as the reference writes it.
      out.position = p;
      out.uint(line);
      out.ensure(room);
      buf = out.buffer;
      p = out.position;
    }
    const nonAscii = !this.#ascii;
    const trim = this.#trim;
    const values = this.#values;
    const columns = this.#columns;
    for (let k = 0; k < columns.length; k++) {
      const col = columns[k]!;
      buf[p++] = TAB;
      const kind = col.kind;
      let next = GENERIC;
      if (kind !== Kind.Generic) {
        let s = fs[col.field]!;
        let e = fe[col.field]!;
        if (trim) {
          while (s < e && isSpace(src[s]!)) s++;
          while (e > s && isSpace(src[e - 1]!)) e--;
        }
        // Around a non-ASCII character there may be Unicode spaces to trim: the reference reads it.
        if (s < e && trim && (src[s]! >= 0x80 || src[e - 1]! >= 0x80)) next = GENERIC;
        else if (col.nullTokens.find(src, s, e) !== -1) {
          if (col.required) next = SLOW;
          else {
            buf[p] = BACKSLASH;
            buf[p + 1] = 0x4e; // N
            next = p + 2;
            if (col.typed) values[col.slot] = null;
          }
        } else if (s === e && kind !== Kind.Text) next = GENERIC;
        else if (kind === Kind.Text) {
          if (col.column.codelist) {
            next = writeCode(col, src, s, e, buf, p, nonAscii);
            if (next >= 0 && col.typed) values[col.slot] = col.codeValues[lastWord]!;
          } else if (col.maxLength !== null && ((nonAscii && hasNonAscii(src, s, e)) || e - s > col.maxLength)) {
            // maxLength counts characters as JavaScript does: the reference counts non-ASCII text.
            next = nonAscii && hasNonAscii(src, s, e) ? GENERIC : SLOW;
          } else {
            next = copyField(src, s, e, buf, p, escape);
            if (col.typed) values[col.slot] = src.toString('utf8', s, e);
          }
        } else if (kind === Kind.Boolean) {
          next = writeBoolean(col, src, s, e, buf, p, nonAscii);
          if (next >= 0 && col.typed) values[col.slot] = lastValue[0] === 1;
        } else {
          next = kind === Kind.Integer ? writeInteger(src, s, e, buf, p) : writeDecimal(src, s, e, buf, p, col.decimalComma, col.rules.length > 0 || col.typed);
          if (next >= 0) {
            if (col.rules.length > 0 && quickRejects(col.rules, lastValue[0]!)) next = SLOW;
            else if (col.typed) values[col.slot] = lastValue[0]!;
          }
        }
      }
      if (next === GENERIC) {
        out.position = p;
        if (this.#genericColumn(col, out) && (col.rules.length === 0 || !this.#quickRejects(col.rules))) {
          out.ensure(room);
          buf = out.buffer;
          next = out.position;
        } else next = SLOW;
      }
      if (next === SLOW) {
        out.dropRow();
        this.counts.rowsIn--;
        return this.#slowPlain(start, end);
      }
      p = next;
    }
    if (this.#hasRules && (this.#laterRules ? this.#laterRules.length > 0 && this.#quickRejects(this.#laterRules) : this.#cleaner.ruleProblems(this.#values, null) !== null)) {
      out.dropRow();
      this.counts.rowsIn--;
      return this.#slowPlain(start, end);
    }
    buf[p++] = LF;
    out.position = p;
    this.counts.clean++;
  }

  /** A record's line number from its first field (a prepared worksheet writes it in digits). */
  #lineNumber(s: number, e: number): number {
    const src = this.#src;
    if (e > s && e - s <= 15) {
      let n = 0;
      for (let i = s; i < e; i++) {
        const digit = src[i]! - 0x30;
        if (digit < 0 || digit > 9) return Number(src.toString('utf8', s, e));
        n = n * 10 + digit;
      }
      return n;
    }
    return Number(src.toString('utf8', s, e));
  }

  /** Whether bytes `s..e` are blank as `String.prototype.trim` sees it. */
  #blank(s: number, e: number): boolean {
    const src = this.#src;
    for (let i = s; i < e; i++) {
      const c = src[i]!;
      if (isSpace(c)) continue;
      if (c < 0x80) return false;
      return src.toString('utf8', s, e).trim() === '';
    }
    return true;
  }

  /** Whether a quick rule rejects the row (or cannot tell: a value that is not a number). */
  #quickRejects(rules: readonly QuickRule[]): boolean {
    const values = this.#values;
    for (const r of rules) {
      const v = values[r.slot];
      if (v === null) continue;
      if (typeof v !== 'number' || quickRejects([r], v)) return true;
    }
    return false;
  }

  #fill(): void {
    const base = this.#base;
    for (let i = 0; i < this.#width; i++) {
      if (!this.#filled[i] && !this.#blank(this.#fs[i + base]!, this.#fe[i + base]!)) {
        this.#filled[i] = true;
        this.#unfilled--;
      }
    }
  }

  /** A column read by the reference code from its source fields as strings. */
  #genericColumn(col: FastColumn, out: CopyOut): boolean {
    const src = this.#src;
    for (const i of col.sources) this.#decoded[i] = src.toString('utf8', this.#fs[i + this.#base]!, this.#fe[i + this.#base]!);
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

  /** A one-line record without quotes, bytes `start..end`, the reference way. */
  #slowPlain(start: number, end: number): void {
    const text = this.#src.toString('utf8', start, end);
    this.#record(text, text.split(this.#o.delimiter), 0, text.length, null);
  }

  /** A record that starts at `start` and has a quote, the reference way; where the next one starts. */
  #quotedRecord(start: number): number {
    const src = this.#src;
    const d = this.#o.delimiter;
    const q = this.#o.quote!;
    let next = quotedRecordEnd(src, start, d.charCodeAt(0), q.charCodeAt(0));
    for (;;) {
      const text = src.toString('utf8', start, next);
      let record = null as ParsedRecord | null;
      const consumed = parseQuotedRecord(text, 0, d, q, (r) => (record = r));
      // Should the string parser read a record differently from the byte scan, it decides: it
      // reads on to the chunk's end when it found no end in the scan's record, and a record
      // that ends before the scan's ends where the parser says.
      if (consumed > text.length && next < src.length) {
        next = src.length;
        continue;
      }
      this.#record(text, record!.fields, record!.start, record!.end, record!.problem);
      this.#line += record!.lines;
      if (consumed >= text.length) return next;
      let lines = 0;
      for (let k = text.indexOf('\n'); k !== -1 && k < consumed; k = text.indexOf('\n', k + 1)) lines++;
      let at = start;
      for (let k = 0; k < lines; k++) at = src.indexOf(LF, at) + 1;
      return at;
    }
  }

  /** A record the reference way: the string parser's fields and `RowCleaner.clean`. `text` holds it at `start..end`. */
  #record(text: string, parsed: string[], start: number, end: number, problem: string | null): void {
    let fields = parsed;
    let recordLine = this.#line;
    let rawStart = start;
    if (this.#o.lineField) {
      recordLine = Number(fields[0]);
      rawStart = start + fields[0]!.length + 1;
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
    const result = problem ? { values: null, problems: [{ column: null, reason: 'malformed', message: problem }] as Problem[] } : this.#cleaner.clean(fields);
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
    const raw = text.slice(rawStart, end);
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
