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

  it('refuses what is not an upload of one file: 415, 400 naming the field', async () => {
    expect((await post('{"a":1}', { 'content-type': 'application/json' })).status).toBe(415);
    const noFile = await post(form([['spec', 'x']]));
    expect(noFile.status).toBe(400);
    expect(((await noFile.json()) as { error: { message: string } }).error.message).toBe('body.file: no file was sent');
    const stray = await post(form([['mapping', 'x'], ['file', new Blob(['a']), 'a.csv']]));
    expect(stray.status).toBe(400);
    expect(((await stray.json()) as { error: { issues: { field: string }[] } }).error.issues[0]!.field).toBe('body.mapping');
    const broken = await post('--nope\r\ncontent-disposition: form-data; name="file"\r\n', { 'content-type': 'multipart/form-data; boundary=nope' });
    expect(broken.status).toBe(400);
  });
});
