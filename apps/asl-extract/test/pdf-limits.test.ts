import { randomUUID } from 'node:crypto';
import { loopLagDuring, waitFor } from '@fanout/testdb';
import { describe, expect, it } from 'vitest';
import { createSampleLibrary, renderPdf, samplePaperText } from '../src/library/sample.ts';
import { PdfReader } from '../src/pdf/text.ts';
import { aslTest } from './harness.ts';
import { pdfBomb } from './pdf-bomb.ts';

// Hostile files: a PDF bomb (kilobytes that take pdf.js up to a second of CPU per inflated megabyte,
// and memory for every piece of text) and a file larger than any paper. Each fails its own item
// with a reason, once; the process keeps renewing its leases and works the other papers.


describe('reading hostile PDFs', () => {
  it('stops a PDF bomb at its time limit, off the event loop, and reads the next PDF', async () => {
    // 3 s: a paper takes milliseconds (more on a busy machine); this bomb takes 12 s and more (the
    // memory limit out of its way: this is the time limit's test).
    const reader = new PdfReader({ timeoutMs: 3000, memoryMb: 2048, threads: 1 });
    try {
      const started = Date.now();
      const { result, maxLagMs } = await loopLagDuring(reader.text(pdfBomb(64)));
      const error = result.status === 'rejected' ? result.reason : null;
      expect(error).toMatchObject({ name: 'PermanentError', code: 'pdf_too_complex' });
      expect((error as Error).message).toContain('took too long');
      expect(Date.now() - started).toBeLessThan(10_000);
      // Parsed on the event loop, this bomb would block it for 12 s and more; a busy machine adds some.
      expect(maxLagMs).toBeLessThan(1000);
      const { lines } = samplePaperText(3);
      expect(await reader.text(await renderPdf(lines))).toContain(lines[2]);
    } finally {
      await reader.close();
    }
  });

  it('stops a PDF bomb at its memory limit', async () => {
    const reader = new PdfReader({ timeoutMs: 120_000, memoryMb: 48, threads: 1 });
    try {
      await expect(reader.text(pdfBomb(16))).rejects.toMatchObject({ name: 'PermanentError', code: 'pdf_too_complex', message: expect.stringContaining('more than 48 MB') });
    } finally {
      await reader.close();
    }
  });

  it('stops reading when the item is cancelled, and refuses a file over the size limit before reading it', async () => {
    const reader = new PdfReader({ timeoutMs: 120_000, threads: 1, maxBytes: 1024 * 1024 });
    try {
      const cancel = new AbortController();
      const reading = reader.text(pdfBomb(24), { signal: cancel.signal });
      setTimeout(() => cancel.abort(new Error('cancelled by the user')), 200);
      const started = Date.now();
      await expect(reading).rejects.toThrow('cancelled by the user');
      expect(Date.now() - started).toBeLessThan(2000);
      expect(() => reader.checkSize(5 * 1024 * 1024)).toThrow(expect.objectContaining({ code: 'pdf_too_large', message: 'the file is 5.0 MB, over the limit of 1.0 MB' }));
    } finally {
      await reader.close();
    }
  });

  it('in a batch, a bomb and a huge file fail alone and once, with reasons; the other papers are read once, on time', async () => {
    await using t = await aslTest({ ASL_PDF_TIMEOUT_MS: 5000, ASL_PDF_MAX_BYTES: 2 * 1024 * 1024 });
    await t.api();
    await t.workers(1);
    const good = await createSampleLibrary(t.prisma, t.storage, 'team-a', 6);
    const hostile = [
      // Past the 5 s limit on a fast machine too (24 MB was read in 4 s on one).
      { id: randomUUID(), filename: 'bomb.pdf', bytes: pdfBomb(64) },
      { id: randomUUID(), filename: 'huge.pdf', bytes: new Uint8Array(3 * 1024 * 1024).fill(0x25) },
    ];
    for (const doc of hostile) {
      const storageKey = `team-a/${doc.id}.pdf`;
      await t.storage.write(storageKey, doc.bytes);
      await t.prisma.kbDocument.create({ data: { id: doc.id, owner: 'team-a', title: doc.filename, filename: doc.filename, storageKey } });
    }
    const res = await t.call('POST', '/tasks', { body: { input: { documentIds: [hostile[0]!.id, ...good, hostile[1]!.id] } } });
    expect(res.status).toBe(202);
    const { id } = (await res.json()) as { id: string };
    const task = await waitFor(
      async () => {
        const x = (await (await t.call('GET', `/tasks/${id}`)).json()) as { status: string };
        return ['completed', 'failed', 'cancelled'].includes(x.status) ? x : null;
      },
      { timeoutMs: 60_000, message: 'the batch ended' },
    );
    expect(task).toMatchObject({ status: 'completed', total: 8, succeeded: 6, failed: 2 });
    const items = ((await (await t.call('GET', `/tasks/${id}/items?limit=20`)).json()) as { items: { key: string; attempts: number; status: string; error: { code: string; message: string } | null }[] }).items;
    const byKey = new Map(items.map((i) => [i.key, i]));
    expect(byKey.get(hostile[0]!.id)).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'pdf_too_complex' } });
    expect(byKey.get(hostile[1]!.id)).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'pdf_too_large', message: 'the file is 3.0 MB, over the limit of 2.0 MB' } });
    // Nobody's lease lapsed while the bomb was read: every paper ran once.
    for (const doc of good) expect(byKey.get(doc)).toMatchObject({ status: 'succeeded', attempts: 1 });
  });
});
