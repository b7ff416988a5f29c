// Runs on a worker thread of the PDF reader's pool (see text.ts): parsing happens here, off the
// worker process's event loop. Imports only what parsing needs.
import { readFile } from 'node:fs/promises';
import { extractText, getDocumentProxy } from 'unpdf';

const failure = (code: string, message: string) => Object.assign(new Error(message), { code });

/**
 * The text of a PDF, given as bytes or as a file this thread reads (so the worker process never
 * holds files waiting for a thread); a failure carries the code of the item error it becomes.
 */
export default async function readPdfText(input: { bytes: Uint8Array } | { path: string }): Promise<string> {
  let bytes: Uint8Array;
  if ('path' in input) {
    try {
      bytes = new Uint8Array(await readFile(input.path));
    } catch (error) {
      if ((error as { code?: string }).code === 'ENOENT') throw failure('missing_file', 'the file is missing from storage');
      throw error;
    }
  } else bytes = input.bytes;
  let pdf;
  try {
    // pdf.js takes over (detaches) the buffer it is given: it was moved to this thread for that.
    pdf = await getDocumentProxy(bytes, { verbosity: 0 });
  } catch (error) {
    if ((error as Error)?.name === 'PasswordException') throw failure('encrypted_pdf', 'the PDF is encrypted (password protected)');
    throw failure('corrupt_pdf', `not a readable PDF: ${(error as Error)?.message ?? error}`);
  }
  try {
    const { text } = await extractText(pdf, { mergePages: true });
    if (!text.trim()) throw failure('no_text', 'the PDF has no extractable text (scanned images?)');
    return text;
  } finally {
    await pdf.cleanup();
  }
}
