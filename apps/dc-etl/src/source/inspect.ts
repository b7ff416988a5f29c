import { open } from 'node:fs/promises';
import { createReadStream } from 'node:fs';
import { createGunzip } from 'node:zlib';
import { parseRecords } from './csv.ts';
import { readXlsxHeader } from './xlsx.ts';

export type SourceFormat = 'csv' | 'tsv' | 'xlsx';
export type SourceEncoding = 'utf-8' | 'utf-16le' | 'utf-16be' | 'windows-1252' | 'latin1';

/** What the spec says about the file (all optional but the header row). */
export interface SourceOptions {
  format?: SourceFormat | undefined;
  delimiter?: string | undefined;
  quote: string | null;
  encoding?: SourceEncoding | undefined;
  headerRow: number;
  sheet?: string | undefined;
}

/** What a file is, as found at upload and again by the manager. */
export interface SourceInfo {
  format: SourceFormat;
  compression: 'gzip' | null;
  encoding: SourceEncoding;
  /** Bytes of a byte-order mark at the start (of the decompressed text). */
  bom: number;
  delimiter: string;
  quote: string | null;
  headerRow: number;
  sheet: string | null;
  /** The column names, as in the header row (trimmed). */
  header: string[];
}

/** A file that cannot be loaded as it is: the status and the reason, naming the field. */
export class SourceError extends Error {
  readonly status: 400 | 415;
  readonly rule: string;
  constructor(message: string, rule: string, status: 400 | 415 = 400) {
    super(message);
    this.rule = rule;
    this.status = status;
  }
}

const SAMPLE = 256 * 1024;

async function head(path: string, bytes: number): Promise<Buffer> {
  const file = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(bytes);
    const { bytesRead } = await file.read(buffer, 0, bytes, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await file.close();
  }
}

async function gunzipHead(path: string, bytes: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let total = 0;
  const stream = createReadStream(path).pipe(createGunzip());
  try {
    for await (const part of stream as AsyncIterable<Buffer>) {
      parts.push(part);
      total += part.length;
      if (total >= bytes) break;
    }
  } catch (error) {
    // A file gone meanwhile is said as such by the caller (its error names the server's path).
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw error;
    if (total === 0) throw new SourceError(`the file is not a readable gzip file (${(error as Error).message})`, 'invalid_gzip');
  } finally {
    stream.destroy();
  }
  return Buffer.concat(parts).subarray(0, bytes);
}

/** Whether bytes are valid UTF-8, ignoring a sequence cut at the end of the sample. */
function isUtf8(sample: Buffer, complete: boolean): boolean {
  let end = sample.length;
  if (!complete) {
    // Back off a multi-byte sequence the sample cut in two.
    let k = end - 1;
    while (k >= 0 && end - k <= 3 && (sample[k]! & 0xc0) === 0x80) k--;
    if (k >= 0 && sample[k]! >= 0xc0) end = k;
  }
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(sample.subarray(0, end));
    return true;
  } catch {
    return false;
  }
}

export function formatOf(filename: string, options: SourceOptions): SourceFormat {
  if (options.format) return options.format;
  const name = filename.toLowerCase().replace(/\.gz$/, '');
  if (name.endsWith('.xlsx')) return 'xlsx';
  if (name.endsWith('.tsv') || name.endsWith('.tab')) return 'tsv';
  return 'csv';
}

/**
 * Finds what a file is without reading it whole: gzip or not, CSV, TSV or a spreadsheet, its
 * encoding and byte-order mark, and its header. Refuses binary content (a program, an image, a
 * zip named .csv) with the reason.
 */
export async function inspectSource(path: string, filename: string, options: SourceOptions): Promise<SourceInfo> {
  const raw = await head(path, SAMPLE);
  if (raw.length === 0) throw new SourceError('the file is empty', 'empty_file');
  const gzip = raw[0] === 0x1f && raw[1] === 0x8b;
  const format = formatOf(filename, options);
  const zip = raw[0] === 0x50 && raw[1] === 0x4b && raw[2] === 0x03 && raw[3] === 0x04;
  if (format === 'xlsx') {
    if (!zip) throw new SourceError(`the file "${filename}" is not an .xlsx workbook (no zip signature)`, 'invalid_xlsx');
    const { sheet, header } = await readXlsxHeader(path, options.sheet ?? null, options.headerRow);
    return { format, compression: null, encoding: 'utf-8', bom: 0, delimiter: ',', quote: '"', headerRow: options.headerRow, sheet, header };
  }
  if (zip) throw new SourceError(`the file "${filename}" is a zip archive, not ${format.toUpperCase()} text (an .xlsx workbook must be named .xlsx)`, 'binary_file');
  const sample = gzip ? await gunzipHead(path, SAMPLE) : raw;
  const complete = sample.length < SAMPLE;
  let encoding: SourceEncoding;
  let bom = 0;
  if (sample[0] === 0xef && sample[1] === 0xbb && sample[2] === 0xbf) [encoding, bom] = ['utf-8', 3];
  else if (sample[0] === 0xff && sample[1] === 0xfe) [encoding, bom] = ['utf-16le', 2];
  else if (sample[0] === 0xfe && sample[1] === 0xff) [encoding, bom] = ['utf-16be', 2];
  else encoding = options.encoding ?? (isUtf8(sample, complete) ? 'utf-8' : 'windows-1252');
  if (options.encoding && bom > 0 && options.encoding !== encoding) {
    throw new SourceError(`the file starts with a ${encoding} byte-order mark, but the spec says ${options.encoding}`, 'encoding_mismatch');
  }
  if (!encoding.startsWith('utf-16')) {
    const nul = sample.indexOf(0);
    let control = 0;
    for (const b of sample) if (b < 9 || (b > 13 && b < 32 && b !== 27)) control++;
    if (nul !== -1 || control > sample.length / 100) {
      throw new SourceError(`the file "${filename}" is not text: it has binary bytes${nul !== -1 ? ` (a NUL at byte ${nul})` : ''}`, 'binary_file');
    }
  }
  const text = new TextDecoder(encoding).decode(sample.subarray(bom));
  const delimiter = options.delimiter ?? (format === 'tsv' ? '\t' : ',');
  let header: string[] | null = null;
  let line = 1;
  parseRecords(text, delimiter, options.quote, (record) => {
    if (header === null && line >= options.headerRow) header = record.fields.map((f) => f.trim());
    line += record.lines;
  });
  if (header === null) throw new SourceError(`the file has no header at line ${options.headerRow}`, 'no_header');
  return { format, compression: gzip ? 'gzip' : null, encoding, bom, delimiter, quote: options.quote, headerRow: options.headerRow, sheet: null, header };
}
