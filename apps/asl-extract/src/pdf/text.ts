import { PermanentError } from '@fanout/core';
import { WorkerJobError, WorkerPool } from '@fanout/kit';

export interface PdfReaderOptions {
  /** The largest file read, in bytes; a larger one fails at once. @default 100 MB */
  maxBytes?: number;
  /** The longest one PDF may take to read. @default 60000 */
  timeoutMs?: number;
  /** Memory of one reading thread (V8 heap), in MB. @default 512 */
  memoryMb?: number;
  /** PDFs read at once in this process. @default min(cores, 4) */
  threads?: number;
}

const MB = 1024 * 1024;
const CODES = new Set(['encrypted_pdf', 'corrupt_pdf', 'no_text', 'missing_file']);

/**
 * Reads the text of PDFs on worker threads, within limits of size, time and memory. A hostile
 * PDF (a decompression bomb, millions of drawing operators) is stopped and fails its own item
 * permanently with a reason, while the process goes on renewing its leases and working the
 * other items; a cancel stops its reading at once. Corrupt, encrypted and image-only files fail
 * permanently too: retrying will not change the bytes.
 */
export class PdfReader {
  readonly maxBytes: number;
  readonly #pool: WorkerPool;
  readonly #memoryMb: number;

  constructor(options: PdfReaderOptions = {}) {
    this.maxBytes = options.maxBytes ?? 100 * MB;
    this.#memoryMb = options.memoryMb ?? 512;
    this.#pool = new WorkerPool({
      module: new URL('./text-job.ts', import.meta.url),
      timeoutMs: options.timeoutMs ?? 60_000,
      resourceLimits: { maxOldGenerationSizeMb: this.#memoryMb },
      ...(options.threads ? { size: options.threads } : {}),
    });
  }

  /** Refuses a file over the size limit before it is read (`size` from the storage). */
  checkSize(size: number): void {
    if (size > this.maxBytes) {
      throw new PermanentError(`the file is ${(size / MB).toFixed(1)} MB, over the limit of ${(this.maxBytes / MB).toFixed(1)} MB`, { code: 'pdf_too_large' });
    }
  }

  /** The PDF's text. The bytes are moved to the reading thread: do not use them afterwards. */
  async text(bytes: Uint8Array, options: { signal?: AbortSignal } = {}): Promise<string> {
    this.checkSize(bytes.byteLength);
    // A view over part of a larger buffer cannot be moved alone.
    const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
    return this.#read({ bytes: own }, [own.buffer as ArrayBuffer], options.signal);
  }

  /**
   * The text of the PDF file at `path` of `size` bytes (checked first): the reading thread reads
   * it once its turn comes, so files waiting for a thread are not held in memory.
   */
  async fileText(path: string, size: number, options: { signal?: AbortSignal } = {}): Promise<string> {
    this.checkSize(size);
    return this.#read({ path }, [], options.signal);
  }

  async #read(input: { bytes: Uint8Array } | { path: string }, transfer: ArrayBuffer[], signal: AbortSignal | undefined): Promise<string> {
    try {
      return await this.#pool.run<string>(input, { transfer, ...(signal ? { signal } : {}) });
    } catch (error) {
      if (!(error instanceof WorkerJobError)) throw error;
      if (error.reason === 'aborted' && signal?.aborted) throw signal.reason;
      if (error.reason === 'failed' && error.code && CODES.has(error.code)) throw new PermanentError(error.message, { code: error.code, cause: error });
      if (error.reason === 'timeout') throw new PermanentError(`reading the PDF took too long (${error.message.replace('the job took ', '')}); it is too complex or built to stall readers`, { code: 'pdf_too_complex', cause: error });
      if (error.reason === 'out_of_memory') throw new PermanentError(`reading the PDF needed more than ${this.#memoryMb} MB of memory; it is too complex or built to exhaust readers`, { code: 'pdf_too_complex', cause: error });
      // A thread that failed otherwise (it could not start, say) says nothing of the file: retried.
      throw error;
    }
  }

  /** Stops the reading threads. */
  close(): Promise<void> {
    return this.#pool.close();
  }
}
