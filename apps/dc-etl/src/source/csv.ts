// CSV as RFC 4180 reads it, with what real extracts add: a quote opens a quoted field only at
// the start of a field (a quote inside an unquoted field, as in 37.8"N, is text), CRLF or LF
// line ends (CRLF inside a quoted field is kept), a last line without a line end. The planner
// scans bytes for record ends; a child parses the text of its range with the same rules, so
// both agree on where every record starts.

const LF = 10;
const CR = 13;

/** Where a record is in the file: its byte range (line end included) and its first line. */
export interface RecordSpan {
  start: number;
  end: number;
  line: number;
}

// Scanner states (numbers: the loop runs once per byte).
const ScanState = { FieldStart: 0, Unquoted: 1, Quoted: 2, QuoteInQuoted: 3 } as const;
type ScanState = (typeof ScanState)[keyof typeof ScanState];

/**
 * Finds record boundaries in a byte stream (UTF-8 or any ASCII-compatible encoding), one buffer
 * at a time: each record's start and end offsets and first line number. A newline inside a
 * quoted field does not end a record, which a naive split at line ends gets wrong.
 */
export class RecordScanner {
  #state: ScanState = ScanState.FieldStart;
  #offset = 0;
  #recordStart = 0;
  #recordLine = 1;
  #line = 1;
  readonly #delimiter: number;
  readonly #quote: number;

  constructor(delimiter: string, quote: string | null) {
    this.#delimiter = delimiter.charCodeAt(0);
    this.#quote = quote === null ? -1 : quote.charCodeAt(0);
  }

  /** Bytes scanned so far. */
  get offset(): number {
    return this.#offset;
  }

  /** Scans the next bytes; `onRecord` gets every record that ends in them. */
  push(bytes: Uint8Array, onRecord: (span: RecordSpan) => void): void {
    const d = this.#delimiter;
    const q = this.#quote;
    let state: ScanState = this.#state;
    let line = this.#line;
    const base = this.#offset;
    const n = bytes.length;
    // Where the next quote is (n: none in this buffer); looked up again once passed.
    let nextQuote = -1;
    let i = 0;
    while (i < n) {
      if (state === ScanState.FieldStart || state === ScanState.Unquoted) {
        // Fast path: a line end with no quote before it ends the record (most lines).
        if (nextQuote < i) {
          const found = q === -1 ? -1 : bytes.indexOf(q, i);
          nextQuote = found === -1 ? n : found;
        }
        const nl = bytes.indexOf(LF, i);
        if (nl !== -1 && nl < nextQuote) {
          line++;
          onRecord({ start: this.#recordStart, end: base + nl + 1, line: this.#recordLine });
          this.#recordStart = base + nl + 1;
          this.#recordLine = line;
          state = ScanState.FieldStart;
          i = nl + 1;
          continue;
        }
      }
      const b = bytes[i]!;
      i++;
      if (state === ScanState.Quoted) {
        if (b === q) state = ScanState.QuoteInQuoted;
        else if (b === LF) line++;
        continue;
      }
      if (b === LF) {
        line++;
        onRecord({ start: this.#recordStart, end: base + i, line: this.#recordLine });
        this.#recordStart = base + i;
        this.#recordLine = line;
        state = ScanState.FieldStart;
      } else if (b === d) {
        state = ScanState.FieldStart;
      } else if (state === ScanState.FieldStart) {
        state = b === q ? ScanState.Quoted : b === CR ? ScanState.FieldStart : ScanState.Unquoted;
      } else if (state === ScanState.QuoteInQuoted) {
        // "" is an escaped quote; anything else after a closing quote is malformed text the
        // child reports, read on as unquoted so both sides agree on the record's end.
        state = b === q ? ScanState.Quoted : b === CR ? ScanState.QuoteInQuoted : ScanState.Unquoted;
      }
    }
    this.#state = state;
    this.#line = line;
    this.#offset = base + n;
  }

  /** The last record, when the file does not end with a line end. */
  finish(onRecord: (span: RecordSpan) => void): void {
    if (this.#offset > this.#recordStart) onRecord({ start: this.#recordStart, end: this.#offset, line: this.#recordLine });
    this.#recordStart = this.#offset;
  }
}

/** One parsed record: its fields, where its text is in the parsed string, and how many lines it spans. */
export interface ParsedRecord {
  fields: string[];
  /** The record's text is `text.slice(start, end)` (without its line end). */
  start: number;
  end: number;
  lines: number;
  /** Why the record is malformed (an unclosed quote, text after a closing quote), or null. */
  problem: string | null;
}

/**
 * Parses complete records from a string (a chunk's text), calling `onRecord` for each. Lines
 * without a quote take a fast path (`split`), which is most lines of most files.
 */
export function parseRecords(text: string, delimiter: string, quote: string | null, onRecord: (record: ParsedRecord) => void): void {
  const n = text.length;
  let pos = 0;
  let nextQuote = quote === null ? -1 : text.indexOf(quote, 0);
  while (pos < n) {
    let nl = text.indexOf('\n', pos);
    if (nl === -1) nl = n;
    if (nextQuote !== -1 && nextQuote < pos) nextQuote = text.indexOf(quote!, pos);
    if (nextQuote === -1 || nextQuote > nl) {
      const end = nl > pos && text.charCodeAt(nl - 1) === CR ? nl - 1 : nl;
      onRecord({ fields: text.slice(pos, end).split(delimiter), start: pos, end, lines: 1, problem: null });
      pos = nl + 1;
      continue;
    }
    pos = parseQuotedRecord(text, pos, delimiter, quote!, onRecord);
  }
}

/**
 * Parses the record that starts at `start` the slow way (quotes, newlines in fields); returns
 * where the next record starts. `parseRecords` takes this path for lines with a quote.
 */
export function parseQuotedRecord(text: string, start: number, d: string, q: string, onRecord: (record: ParsedRecord) => void): number {
  const n = text.length;
  const fields: string[] = [];
  let problem: string | null = null;
  let lines = 1;
  let i = start;
  for (;;) {
    // At the start of a field.
    let value = '';
    if (text[i] === q) {
      let from = i + 1;
      for (;;) {
        const close = text.indexOf(q, from);
        if (close === -1) {
          value += text.slice(from);
          problem ??= 'a quoted field is not closed before the end of the file';
          i = n;
          break;
        }
        value += text.slice(from, close);
        if (text[close + 1] === q) {
          value += q;
          from = close + 2;
          continue;
        }
        i = close + 1;
        break;
      }
      for (let k = value.indexOf('\n'); k !== -1; k = value.indexOf('\n', k + 1)) lines++;
      // After the closing quote: a delimiter, a line end, or malformed text kept as it is.
      while (i < n && text[i] !== d && text[i] !== '\n') {
        if (!(text[i] === '\r' && (i + 1 === n || text[i + 1] === '\n'))) {
          problem ??= `unexpected text after a closing quote in field ${fields.length + 1}`;
          value += text[i];
        }
        i++;
      }
    } else {
      const from = i;
      while (i < n && text[i] !== d && text[i] !== '\n') i++;
      value = text.slice(from, i > from && text[i - 1] === '\r' && (i === n || text[i] === '\n') ? i - 1 : i);
    }
    fields.push(value);
    if (i < n && text[i] === d) {
      i++;
      continue;
    }
    // A line end or the end of the text ends the record.
    const end = i > start && text[i - 1] === '\r' ? i - 1 : i;
    onRecord({ fields, start, end, lines, problem });
    return i + 1;
  }
}
