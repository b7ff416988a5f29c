import { open, stat } from 'node:fs/promises';
import xport from 'xport-js';
import { UnreadableFileError, type Column, type ParsedTable, type Row } from './table.ts';

// xport-js is CommonJS with a default export; under ESM the class is on `.default`.
const Library = ((xport as unknown as { default?: typeof xport }).default ?? xport) as unknown as new (path: string) => XportLibrary;

interface XportLibrary {
  getMetadata(): Promise<{ dataset: string; name: string; label: string; length: number; type: 'Char' | 'Num' }[]>;
  read(options: { rowFormat: 'array'; skipHeader: boolean }): AsyncIterable<(string | number | null)[]>;
}

const LIBRARY_V5 = 'HEADER RECORD*******LIBRARY HEADER RECORD!!!!!!!000000000000000000000000000000';
const LIBRARY_V8 = 'HEADER RECORD*******LIBV8   HEADER RECORD!!!!!!!000000000000000000000000000000';
const MEMBER = 'HEADER RECORD*******MEMBER  HEADER RECORD!!!!!!!';
const NAMESTR = 'HEADER RECORD*******NAMESTR HEADER RECORD!!!!!!!';
const OBS = 'HEADER RECORD*******OBS     HEADER RECORD!!!!!!!000000000000000000000000000000';
const NAMESTR_BYTES = 140;

/**
 * Checks the structure of a SAS transport (XPORT v5) file before any of it is read: the library,
 * member, variable-descriptor and observation headers, the variable count and lengths, and that
 * the observations fill whole records. xport-js trusts its input; a truncated or corrupt file must
 * be refused here with the reason, not half-read.
 */
async function checkStructure(path: string): Promise<{ variables: number; rowLength: number; rows: number }> {
  const size = (await stat(path)).size;
  const handle = await open(path, 'r');
  try {
    const headLength = Math.min(size, 64 * 1024);
    const head = Buffer.alloc(headLength);
    await handle.read(head, 0, headLength, 0);
    const text = head.toString('latin1');
    if (size < 80 * 8) throw new UnreadableFileError(`not a SAS transport file: ${size} bytes is too short for its headers`);
    if (text.startsWith(LIBRARY_V8)) throw new UnreadableFileError('SAS transport version 8 is not supported; export as XPORT version 5');
    if (!text.startsWith(LIBRARY_V5)) throw new UnreadableFileError('not a SAS transport (XPORT v5) file: the library header record is missing');
    if (text.slice(240, 240 + MEMBER.length) !== MEMBER) throw new UnreadableFileError('corrupt SAS transport file: the member header record is missing');
    const namestrAt = text.indexOf(NAMESTR, 240);
    if (namestrAt < 0) throw new UnreadableFileError('corrupt SAS transport file: the variable descriptor (NAMESTR) header is missing');
    const count = Number(text.slice(namestrAt + 54, namestrAt + 58));
    if (!Number.isInteger(count) || count < 1 || count > 9999) throw new UnreadableFileError('corrupt SAS transport file: the variable count is not readable');
    const descriptors = namestrAt + 80;
    const obsAt = text.indexOf(OBS, descriptors);
    if (obsAt < 0) throw new UnreadableFileError('corrupt SAS transport file: the observation header record is missing');
    if (obsAt < descriptors + count * NAMESTR_BYTES) throw new UnreadableFileError(`corrupt SAS transport file: ${count} variables announced, fewer described`);
    let rowLength = 0;
    for (let i = 0; i < count; i++) {
      const at = descriptors + i * NAMESTR_BYTES;
      const type = head.readInt16BE(at);
      const length = head.readInt16BE(at + 4);
      if ((type !== 1 && type !== 2) || length < 1 || length > 200 || (type === 1 && (length < 2 || length > 8))) {
        throw new UnreadableFileError(`corrupt SAS transport file: variable ${i + 1} has an impossible type or length`);
      }
      rowLength += length;
    }
    const data = size - (obsAt + 80);
    if (data % 80 !== 0) throw new UnreadableFileError(`corrupt SAS transport file: the observations end mid-record (${data} bytes is not a multiple of 80; truncated?)`);
    // Observations fill the data; what is left at the end is blank padding of the last record.
    const rows = Math.floor(data / rowLength);
    const tail = Buffer.alloc(data - rows * rowLength);
    if (tail.length > 0) await handle.read(tail, 0, tail.length, obsAt + 80 + rows * rowLength);
    if (tail.some((byte) => byte !== 0x20)) throw new UnreadableFileError('corrupt SAS transport file: the last observation is incomplete (truncated?)');
    return { variables: count, rowLength, rows };
  } finally {
    await handle.close();
  }
}

/** Reads a SAS transport file: columns from its variable descriptors, rows as name -> value. */
export async function readXpt(path: string): Promise<ParsedTable & { expectedRows: number }> {
  const structure = await checkStructure(path);
  const library = new Library(path);
  let meta: Awaited<ReturnType<XportLibrary['getMetadata']>>;
  try {
    meta = await library.getMetadata();
  } catch (error) {
    throw new UnreadableFileError(`corrupt SAS transport file: ${(error as Error).message}`);
  }
  if (meta.length !== structure.variables) throw new UnreadableFileError(`corrupt SAS transport file: ${structure.variables} variables announced, ${meta.length} read`);
  const columns: Column[] = meta.map((m) => ({ name: m.name.toUpperCase(), label: m.label ?? '', type: m.type === 'Num' ? 'num' : 'char', length: Number(m.length) || null }));
  const names = columns.map((c) => c.name);
  if (new Set(names).size !== names.length) throw new UnreadableFileError('corrupt SAS transport file: two variables have the same name');
  return {
    name: meta[0]?.dataset ? String(meta[0].dataset).toUpperCase() : null,
    label: null,
    columns,
    expectedRows: structure.rows,
    async *rows() {
      for await (const values of library.read({ rowFormat: 'array', skipHeader: true })) {
        if (values.length !== columns.length) throw new UnreadableFileError(`corrupt SAS transport file: an observation has ${values.length} values for ${columns.length} variables`);
        const row: Row = {};
        for (let i = 0; i < columns.length; i++) {
          const value = values[i];
          // IBM floats converted to doubles carry noise in the last digits (9.3 read as 9.299999999999999);
          // 15 significant digits is what SAS itself shows and what validators compare.
          if (columns[i]!.type === 'num') row[names[i]!] = typeof value === 'number' && Number.isFinite(value) ? Number(value.toPrecision(15)) : null;
          else row[names[i]!] = typeof value === 'string' ? value : value == null ? '' : String(value);
        }
        yield row;
      }
    },
  };
}
