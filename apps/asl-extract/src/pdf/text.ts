import { PermanentError } from '@fanout/core';
import { extractText, getDocumentProxy } from 'unpdf';

/**
 * The full text of a PDF. A file that is not a readable PDF (corrupt, truncated, encrypted) is a
 * permanent failure: retrying will not change the bytes.
 */
export async function pdfText(bytes: Uint8Array): Promise<string> {
  let pdf;
  try {
    // pdf.js takes over (detaches) the buffer it is given: hand it a copy.
    pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
  } catch (error) {
    const name = (error as Error)?.name;
    if (name === 'PasswordException') throw new PermanentError('the PDF is encrypted (password protected)', { code: 'encrypted_pdf', cause: error });
    throw new PermanentError(`not a readable PDF: ${(error as Error)?.message ?? error}`, { code: 'corrupt_pdf', cause: error });
  }
  try {
    const { text } = await extractText(pdf, { mergePages: true });
    if (!text.trim()) throw new PermanentError('the PDF has no extractable text (scanned images?)', { code: 'no_text' });
    return text;
  } finally {
    await pdf.cleanup();
  }
}
