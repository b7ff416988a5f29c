import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import busboy from 'busboy';
import type { Context } from 'hono';
import { HttpError } from '../errors.ts';

export interface UploadOptions {
  /** Where the file is written (created if missing). */
  dir: string;
  /** The largest file accepted, in bytes; beyond it the request is refused with 413 and nothing is kept. */
  maxBytes: number;
  /** The form field holding the file. @default 'file' */
  field?: string;
  /** Other form fields read (text, at most 64 KB each); others are refused. @default [] */
  fields?: readonly string[];
}

export interface ReceivedFile {
  /** Where it was written: `<dir>/<uuid>`. The caller moves or deletes it. */
  path: string;
  /** The name the client gave (not a path: only its last segment, and only for display). */
  filename: string;
  mimeType: string;
  bytes: number;
  /** SHA-256 of the content, hex. */
  sha256: string;
}

const issue = (status: 400 | 413 | 415, field: string, rule: string, message: string) =>
  new HttpError(status, status === 413 ? 'payload_too_large' : status === 415 ? 'unsupported_media_type' : 'invalid_request', `${field}: ${message}`, [{ field, rule, message }]);

/** The most text fields an upload may carry. */
const MAX_FIELDS = 20;

/**
 * Receives a `multipart/form-data` upload and streams its file to disk while hashing it: the file
 * never sits whole in memory, and one over `maxBytes` is cut off at the limit (413) with nothing
 * kept. Refuses a request that is not multipart (415), has no file (400), or has a field it does
 * not expect (400). Returns the file and the text fields.
 */
export async function receiveUpload(c: Context, options: UploadOptions): Promise<{ file: ReceivedFile; fields: Record<string, string> }> {
  const fieldName = options.field ?? 'file';
  const type = c.req.header('content-type') ?? '';
  if (!/^multipart\/form-data\b/i.test(type)) throw issue(415, 'headers.content-type', 'multipart_required', 'must be multipart/form-data with a file field');
  const declared = Number(c.req.header('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > options.maxBytes + 64 * 1024) {
    throw issue(413, `body.${fieldName}`, 'too_big', `larger than the limit of ${options.maxBytes} bytes`);
  }
  const body = c.req.raw.body;
  if (!body) throw issue(400, `body.${fieldName}`, 'required', 'no file was sent');
  await mkdir(options.dir, { recursive: true });
  const path = join(options.dir, randomUUID());
  const fields: Record<string, string> = {};
  const received: { file?: ReceivedFile } = {};
  let failure: HttpError | null = null;
  let parser: busboy.Busboy;
  try {
    parser = busboy({ headers: { 'content-type': type }, limits: { fileSize: options.maxBytes, files: 1, fields: MAX_FIELDS, fieldSize: 64 * 1024 } });
  } catch (error) {
    // A multipart type without its boundary, say.
    throw issue(400, 'headers.content-type', 'invalid_multipart', `not a usable multipart/form-data type (${(error as Error).message})`);
  }
  // The file being written (one at most): its stream, and how its write ended, null or why it
  // failed (never a rejection left unheard: a body cut short fails the file's stream too, and an
  // unhandled rejection ends the process).
  let writing = null as { stream: Readable; ended: Promise<unknown> } | null;
  // A write the disk refused (full, no permission): the server's fault, not the request's.
  let diskError: Error | null = null;
  const source = Readable.fromWeb(body as import('node:stream/web').ReadableStream<Uint8Array>);
  parser.on('field', (name, value, info) => {
    if (!(options.fields ?? []).includes(name)) failure ??= issue(400, `body.${name}`, 'unrecognized_field', `not a field of this upload (expected ${[fieldName, ...(options.fields ?? [])].join(', ')})`);
    else if (info.valueTruncated) failure ??= issue(413, `body.${name}`, 'too_big', 'longer than 64 KB');
    else if (value.includes('\u0000')) failure ??= issue(400, `body.${name}`, 'nul_character', 'must not contain the NUL character (U+0000)');
    else fields[name] = value;
  });
  // A second file (busboy stops at `files: 1` and says so only here), or more fields than a form has.
  parser.on('filesLimit', () => {
    failure ??= issue(400, `body.${fieldName}`, 'too_many_files', `one file is expected, in the field "${fieldName}"`);
  });
  parser.on('fieldsLimit', () => {
    failure ??= issue(400, 'body', 'too_many_fields', `more than ${MAX_FIELDS} fields`);
  });
  parser.on('file', (name, stream, info) => {
    if (name !== fieldName || writing) {
      failure ??= issue(400, `body.${name}`, 'unrecognized_field', `one file is expected, in the field "${fieldName}"`);
      // Drained unread; a body cut short fails it too, heard here (an unheard 'error' ends the process).
      stream.on('error', () => {});
      stream.resume();
      return;
    }
    const hash = createHash('sha256');
    let bytes = 0;
    stream.on('data', (chunk: Buffer) => {
      hash.update(chunk);
      bytes += chunk.length;
    });
    stream.on('limit', () => {
      failure ??= issue(413, `body.${fieldName}`, 'too_big', `larger than the limit of ${options.maxBytes} bytes`);
      // Nothing more of the request is read: a client sending without a length would otherwise
      // hold the connection until it stopped, for an answer already known.
      source.destroy();
    });
    const filename = (info.filename ?? '').split(/[\\/]/).pop() ?? '';
    // A name is shown and stored as text: control characters (NUL among them) are refused.
    // eslint-disable-next-line no-control-regex
    if (/[\u0000-\u001f\u007f]/.test(filename)) failure ??= issue(400, `body.${fieldName}.filename`, 'invalid_filename', 'the file name must not contain control characters');
    const out = createWriteStream(path);
    // (A body cut short destroys it too, with the parser's error: only the file system's has a syscall.)
    out.on('error', (error: NodeJS.ErrnoException) => {
      if (error.syscall) diskError ??= error;
    });
    const ended = pipeline(stream, out).then(
      () => {
        received.file = { path, filename, mimeType: info.mimeType, bytes, sha256: hash.digest('hex') };
        return null;
      },
      (reason: unknown) => {
        // The file's stream destroyed, busboy waits for its end forever: the parser goes too.
        parser.destroy(reason as Error);
        return reason;
      },
    );
    writing = { stream, ended };
  });
  const unreadable = (error: unknown) => issue(400, 'body', 'invalid_multipart', `not a readable multipart body (${(error as Error).message})`);
  try {
    await pipeline(source, parser);
  } catch (error) {
    failure ??= unreadable(error);
    // The body is cut short or gone (the client went away): a file being written stops here.
    writing?.stream.destroy(error as Error);
  }
  const writeFailure = await writing?.ended;
  if (writeFailure) failure ??= unreadable(writeFailure);
  if (diskError || failure || !received.file) {
    await rm(path, { force: true });
    // (A 500: its message, which names the server's path, is logged, not sent.)
    if (diskError) throw new Error(`the upload could not be written: ${(diskError as Error).message}`, { cause: diskError });
    throw failure ?? issue(400, `body.${fieldName}`, 'required', 'no file was sent');
  }
  return { file: received.file, fields };
}

/**
 * A stream stage that passes bytes through until more than `maxBytes` went by, then fails with
 * `tooBig()`: a bound on what an upload expands to (a gzip inflated, a workbook written out as
 * CSV), which its own size does not bound.
 */
export function byteLimit(maxBytes: number, tooBig: () => Error): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      seen += chunk.length;
      if (seen > maxBytes) done(tooBig());
      else done(null, chunk);
    },
  });
}
