// PostgreSQL's COPY text format written straight into buffers: a row is built in place and
// either kept or taken back whole (a row found rejected after some of its fields were written).

const BACKSLASH = 0x5c;
const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;

// Blocks whose rows PostgreSQL has (see `recycle`), kept for the next chunks of this process: a
// new block for every 256 KB of rows kept the garbage collector busy (each block is memory
// outside the JavaScript heap, and a chunk fills a dozen).
const spareBlocks: Buffer[] = [];
const SPARE_BLOCKS = 32;
const BLOCK_BYTES = 256 * 1024;

/** COPY text in blocks of about `blockBytes`, handed out whole; a row never spans two blocks. */
export class CopyOut {
  #buf: Buffer;
  #pos = 0;
  #rowStart = 0;
  readonly #blockBytes: number;
  readonly #ready: Buffer[] = [];
  /** The blocks handed out, whole. */
  readonly #out: Buffer[] = [];

  constructor(blockBytes = BLOCK_BYTES) {
    this.#blockBytes = blockBytes;
    this.#buf = this.#block();
  }

  #block(): Buffer {
    return (this.#blockBytes === BLOCK_BYTES && spareBlocks.pop()) || Buffer.allocUnsafe(this.#blockBytes);
  }

  /**
   * Gives the blocks back for the next chunks once nothing reads them any more (the COPY they
   * were written to has ended); this one is not written to again.
   */
  recycle(): void {
    for (const block of [...this.#out.splice(0), this.#buf]) {
      if (block.length === BLOCK_BYTES && spareBlocks.length < SPARE_BLOCKS) spareBlocks.push(block);
    }
  }

  /** Blocks completed and not taken yet. */
  get ready(): number {
    return this.#ready.length;
  }

  /** Starts a row; a full block is set aside first (rows stay whole). */
  beginRow(): void {
    if (this.#pos >= this.#blockBytes - 4096) this.#seal();
    this.#rowStart = this.#pos;
  }

  /** Takes back what was written since `beginRow`. */
  dropRow(): void {
    this.#pos = this.#rowStart;
  }

  /** The blocks completed so far (and the current one when `all`). */
  take(all = false): Buffer[] {
    if (all && this.#pos > 0) this.#seal();
    return this.#ready.splice(0);
  }

  #seal(): void {
    this.#ready.push(this.#buf.subarray(0, this.#pos));
    this.#out.push(this.#buf);
    this.#buf = this.#block();
    this.#pos = 0;
    this.#rowStart = 0;
  }

  /** Room for `n` more bytes in this row: the block grows (a row bigger than a block). */
  #room(n: number): void {
    if (this.#pos + n <= this.#buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.#buf.length * 2, this.#pos + n));
    this.#buf.copy(bigger, 0, 0, this.#pos);
    this.#buf = bigger;
  }

  /** Room for `n` more bytes in the current block, to write in place through `buffer` and `position`. */
  ensure(n: number): void {
    this.#room(n);
  }

  /** The current block (a new one after `ensure` or any write: read it again then). */
  get buffer(): Buffer {
    return this.#buf;
  }

  /** Where the next byte goes in `buffer`. */
  get position(): number {
    return this.#pos;
  }

  set position(p: number) {
    this.#pos = p;
  }

  byte(b: number): void {
    this.#room(1);
    this.#buf[this.#pos++] = b;
  }

  /** A non-negative integer in decimal. */
  uint(n: number): void {
    if (!Number.isSafeInteger(n) || n < 0) return this.text(String(n));
    if (n < 10) return this.byte(0x30 + n);
    let digits = 1;
    for (let x = n; x >= 10; x = Math.floor(x / 10)) digits++;
    this.#room(digits);
    let p = this.#pos + digits;
    this.#pos = p;
    while (n > 0) {
      this.#buf[--p] = 0x30 + (n % 10);
      n = Math.floor(n / 10);
    }
  }

  nullValue(): void {
    this.#room(2);
    this.#buf[this.#pos++] = BACKSLASH;
    this.#buf[this.#pos++] = 0x4e; // N
  }

  /**
   * Characters `start..end` of `text` as a COPY field: ASCII copied a byte at a time with
   * backslash, tab and line ends escaped; anything else encoded as UTF-8.
   */
  textRange(text: string, start: number, end: number): void {
    this.#room((end - start) * 2);
    const buf = this.#buf;
    let pos = this.#pos;
    for (let i = start; i < end; i++) {
      const c = text.charCodeAt(i);
      if (c >= 0x80) {
        this.#pos = pos;
        return this.#textSlow(text.slice(i, end));
      }
      if (c === BACKSLASH || c === TAB || c === LF || c === CR) {
        buf[pos++] = BACKSLASH;
        buf[pos++] = c === BACKSLASH ? BACKSLASH : c === TAB ? 0x74 : c === LF ? 0x6e : 0x72;
      } else buf[pos++] = c;
    }
    this.#pos = pos;
  }

  /** A string as a COPY field (escaped, UTF-8). */
  text(value: string): void {
    this.textRange(value, 0, value.length);
  }

  #textSlow(value: string): void {
    const escaped = /[\\\t\n\r]/.test(value) ? value.replace(/[\\\t\n\r]/g, (ch) => (ch === '\\' ? '\\\\' : ch === '\t' ? '\\t' : ch === '\n' ? '\\n' : '\\r')) : value;
    const n = Buffer.byteLength(escaped, 'utf8');
    this.#room(n);
    this.#pos += this.#buf.write(escaped, this.#pos, 'utf8');
  }

  /** A value of any type the cleaner produces, as COPY text. */
  value(value: unknown): void {
    if (value === null || value === undefined) this.nullValue();
    else if (typeof value === 'string') this.text(value);
    else if (typeof value === 'boolean') this.byte(value ? 0x74 : 0x66);
    else this.text(String(value));
  }
}
