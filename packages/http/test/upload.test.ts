import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Hono } from 'hono';
import { afterAll, describe, expect, it } from 'vitest';
import { errorResponse, receiveUpload } from '../src/index.ts';

const dir = mkdtempSync(join(tmpdir(), 'fanout-upload-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const app = new Hono();
app.onError((error, c) => errorResponse(c, error, () => {}));
app.post('/upload', async (c) => {
  const { file, fields } = await receiveUpload(c, { dir, maxBytes: 1024 * 1024, fields: ['spec'] });
  return c.json({ ...file, content: readFileSync(file.path, 'utf8').slice(0, 20), fields });
});

const form = (entries: [string, string | Blob, string?][]) => {
  const body = new FormData();
  for (const [name, value, filename] of entries) (value instanceof Blob ? body.append(name, value, filename) : body.append(name, value));
  return body;
};
const post = (body: FormData | string, headers: Record<string, string> = {}) => app.request('/upload', { method: 'POST', body, headers });

describe('uploads', () => {
  it('streams a file to disk with its hash, size and name, and returns the text fields', async () => {
    const text = 'subject,age\n1,34\n';
    const res = await post(form([['spec', 'version: 1'], ['file', new Blob([text], { type: 'text/csv' }), '../../etc/data.csv']]));
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ filename: 'data.csv', mimeType: 'text/csv', bytes: text.length, sha256: createHash('sha256').update(text).digest('hex'), content: text.slice(0, 20), fields: { spec: 'version: 1' } });
  });

  it('refuses a file over the limit with 413 and keeps nothing of it', async () => {
    const before = readdirSync(dir).length;
    const res = await post(form([['file', new Blob([new Uint8Array(1024 * 1024 + 10)]), 'big.bin']]));
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: { issues: unknown[] } }).error.issues).toEqual([expect.objectContaining({ field: 'body.file', rule: 'too_big' })]);
    expect(readdirSync(dir).length).toBe(before);
  });

  it('stops reading a file over the limit at the limit when it comes without a length', async () => {
    const before = readdirSync(dir).length;
    const boundary = 'b0undary';
    const head = new TextEncoder().encode(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="big.bin"\r\ncontent-type: application/octet-stream\r\n\r\n`);
    const chunk = new Uint8Array(64 * 1024);
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(head);
      },
      pull(controller) {
        sent += chunk.length;
        controller.enqueue(chunk);
        if (sent >= 64 * 1024 * 1024) controller.close();
      },
    });
    const res = await app.request('/upload', { method: 'POST', body, duplex: 'half', headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } } as RequestInit);
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: { issues: unknown[] } }).error.issues).toEqual([expect.objectContaining({ field: 'body.file', rule: 'too_big' })]);
    expect(sent).toBeLessThan(4 * 1024 * 1024);
    expect(readdirSync(dir).length).toBe(before);
  });

  it('refuses what is not an upload of one file: 415, 400 naming the field', async () => {
    expect((await post('{"a":1}', { 'content-type': 'application/json' })).status).toBe(415);
    const noFile = await post(form([['spec', 'x']]));
    expect(noFile.status).toBe(400);
    expect(((await noFile.json()) as { error: { message: string } }).error.message).toBe('body.file: no file was sent');
    const stray = await post(form([['mapping', 'x'], ['file', new Blob(['a']), 'a.csv']]));
    expect(stray.status).toBe(400);
    expect(((await stray.json()) as { error: { issues: { field: string }[] } }).error.issues[0]!.field).toBe('body.mapping');
    // A second file was dropped unsaid (busboy's file limit).
    const before = readdirSync(dir).length;
    const two = await post(form([['file', new Blob(['a']), 'a.csv'], ['file', new Blob(['b']), 'b.csv']]));
    expect(two.status).toBe(400);
    expect(((await two.json()) as { error: { issues: unknown[] } }).error.issues).toEqual([expect.objectContaining({ field: 'body.file', rule: 'too_many_files' })]);
    expect(readdirSync(dir).length).toBe(before);
    const fields = await post(form([...Array.from({ length: 21 }, () => ['spec', 'x'] as [string, string]), ['file', new Blob(['a']), 'a.csv']]));
    expect(fields.status).toBe(400);
    expect(((await fields.json()) as { error: { issues: unknown[] } }).error.issues).toEqual([expect.objectContaining({ field: 'body', rule: 'too_many_fields' })]);
    const broken = await post('--nope\r\ncontent-disposition: form-data; name="file"\r\n', { 'content-type': 'multipart/form-data; boundary=nope' });
    expect(broken.status).toBe(400);
    const noBoundary = await post('x', { 'content-type': 'multipart/form-data' });
    expect(noBoundary.status).toBe(400);
    expect(((await noBoundary.json()) as { error: { issues: { field: string; rule: string }[] } }).error.issues).toEqual([
      expect.objectContaining({ field: 'headers.content-type', rule: 'invalid_multipart' }),
    ]);
  });

  // Each of these rejected the file's write unheard, and Node ends a process on an unhandled
  // rejection: one request took down the API process of every tenant (vitest fails the run on one).
  it('answers 400 to a body cut short inside its file, and to a client that goes away mid-file, keeping nothing', async () => {
    const before = readdirSync(dir).length;
    const cut = await post('--B\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\n\r\nx,y\n1,2\n', { 'content-type': 'multipart/form-data; boundary=B' });
    expect(cut.status).toBe(400);
    expect(((await cut.json()) as { error: { issues: { rule: string }[] } }).error.issues[0]!.rule).toBe('invalid_multipart');
    // The same, the file under a field the upload does not read (drained unread, its error heard too).
    const stray = await post('--B\r\nContent-Disposition: form-data; name="other"; filename="a.csv"\r\n\r\nx,y\n', { 'content-type': 'multipart/form-data; boundary=B' });
    expect(stray.status).toBe(400);

    const encoder = new TextEncoder();
    const gone = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode('--B\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\n\r\n'));
        controller.enqueue(new Uint8Array(80 * 1024).fill(0x61));
      },
      pull(controller) {
        controller.error(new Error('aborted'));
      },
    });
    const res = await app.request('/upload', { method: 'POST', body: gone, headers: { 'content-type': 'multipart/form-data; boundary=B' }, duplex: 'half' } as RequestInit);
    expect(res.status).toBe(400);
    expect(readdirSync(dir).length).toBe(before);
  });
});
