import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Hono } from 'hono';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { errorResponse, receiveUpload } from '../src/index.ts';

// A full disk, which a test cannot make portably: the upload's file is written to a stream that
// refuses its first write as the file system does (ENOSPC, with its syscall).
vi.mock('node:fs', async (original) => {
  const fs = await original<typeof import('node:fs')>();
  return {
    ...fs,
    createWriteStream: (path: string) =>
      new Writable({
        write(_chunk, _encoding, done) {
          fs.writeFileSync(path, 'partial');
          done(Object.assign(new Error(`ENOSPC: no space left on device, write '${path}'`), { code: 'ENOSPC', syscall: 'write' }));
        },
      }),
  };
});

const dir = mkdtempSync(join(tmpdir(), 'fanout-upload-disk-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const app = new Hono();
const logged: unknown[] = [];
app.onError((error, c) => errorResponse(c, error, (message, data) => logged.push(`${message} ${JSON.stringify(data)}`)));
app.post('/upload', async (c) => c.json((await receiveUpload(c, { dir, maxBytes: 16 * 1024 * 1024 })).file));

describe('uploads on a full disk', () => {
  it('answer 500 without the server path, log why, keep nothing, and do not hang (busboy waited for the destroyed file forever)', async () => {
    const body = new FormData();
    body.append('file', new Blob([new Uint8Array(4 * 1024 * 1024).fill(0x61)]), 'big.csv');
    const res = await app.request('/upload', { method: 'POST', body });
    expect(res.status).toBe(500);
    expect(await res.text()).not.toContain(dir);
    expect(String(logged.at(-1))).toContain('ENOSPC');
    expect(readdirSync(dir).filter((f) => existsSync(join(dir, f)))).toEqual([]);
  });
});
