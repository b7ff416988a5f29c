import type { Context } from 'hono';
import { HttpError } from '../errors.ts';

/** The default largest JSON body, in bytes: an ASL batch of 10,000 document ids is about 400 KB. */
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;

const tooLarge = (limitBytes: number) =>
  new HttpError(413, 'payload_too_large', `body: larger than the limit of ${limitBytes} bytes`, [{ field: 'body', rule: 'too_big', message: `larger than the limit of ${limitBytes} bytes` }]);

/**
 * Reads a JSON body of at most `limitBytes`: refused with 413 at once when its `Content-Length`
 * says more, and cut off with 413 as soon as more arrives (a chunked body), so a large request
 * is never buffered. An empty body is `{}`; one that is not JSON is a 400.
 */
export async function readJsonBody(c: Context, limitBytes: number): Promise<unknown> {
  const declared = Number(c.req.header('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > limitBytes) throw tooLarge(limitBytes);
  const stream = c.req.raw.body;
  let text = '';
  if (stream) {
    const reader = stream.getReader();
    const decoder = new TextDecoder();
    let received = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      received += value.byteLength;
      if (received > limitBytes) {
        await reader.cancel().catch(() => {});
        throw tooLarge(limitBytes);
      }
      text += decoder.decode(value, { stream: true });
    }
    text += decoder.decode();
  }
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, 'invalid_request', 'body: not valid JSON', [{ field: 'body', rule: 'invalid_json', message: 'not valid JSON' }]);
  }
}
