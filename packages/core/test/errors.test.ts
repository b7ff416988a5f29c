import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defaultClassifier, parseRetryAfter, PermanentError, TransientError } from '../src/index.ts';

const http = (status: number, headers: Record<string, string> = {}) => Object.assign(new Error(`HTTP ${status}`), { status, headers });

describe('default classifier', () => {
  it('trusts the error classes and keeps their cause', () => {
    const cause = new Error('disk');
    const permanent = new PermanentError('corrupt pdf', { code: 'corrupt_pdf', cause });
    expect(permanent.cause).toBe(cause);
    expect(defaultClassifier(permanent)).toEqual({ kind: 'permanent', code: 'corrupt_pdf', message: 'corrupt pdf' });
    expect(defaultClassifier(new TransientError('later', { retryAfterMs: 500 }))).toEqual({
      kind: 'transient',
      code: 'transient',
      message: 'later',
      retryAfterMs: 500,
    });
  });

  it('makes 4xx permanent except 408 and 429, and 5xx transient', () => {
    expect(defaultClassifier(http(400)).kind).toBe('permanent');
    expect(defaultClassifier(http(404)).code).toBe('http_404');
    expect(defaultClassifier(http(408)).kind).toBe('transient');
    expect(defaultClassifier(http(500)).kind).toBe('transient');
    expect(defaultClassifier(http(503)).code).toBe('http_503');
    expect(defaultClassifier({ response: { status: 422 }, message: 'x' }).kind).toBe('permanent');
  });

  it('honours Retry-After on 429, in seconds or as an HTTP date, from plain objects or Headers', () => {
    expect(defaultClassifier(http(429, { 'retry-after': '7' }))).toMatchObject({ kind: 'transient', code: 'http_429', retryAfterMs: 7000 });
    const headers = new Headers({ 'Retry-After': '2' });
    expect(defaultClassifier(Object.assign(new Error('x'), { statusCode: 429, headers })).retryAfterMs).toBe(2000);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(defaultClassifier(http(429)).retryAfterMs).toBeUndefined();
  });

  it('honours Retry-After on 503 (the service says when it is back), not on other 5xx', () => {
    expect(defaultClassifier(http(503, { 'retry-after': '30' }))).toMatchObject({ kind: 'transient', code: 'http_503', retryAfterMs: 30_000 });
    expect(defaultClassifier(http(500, { 'retry-after': '30' })).retryAfterMs).toBeUndefined();
    expect(defaultClassifier(http(503)).retryAfterMs).toBeUndefined();
  });

  it('makes validation errors permanent', () => {
    const result = z.object({ a: z.string() }).safeParse({ a: 1 });
    expect(defaultClassifier(result.error)).toMatchObject({ kind: 'permanent', code: 'validation' });
  });

  it('makes network errors and timeouts transient', () => {
    expect(defaultClassifier(Object.assign(new Error('reset'), { code: 'ECONNRESET' }))).toMatchObject({ kind: 'transient', code: 'network' });
    expect(defaultClassifier(new TypeError('fetch failed', { cause: Object.assign(new Error('x'), { code: 'ECONNREFUSED' }) })).code).toBe('network');
    expect(defaultClassifier(new DOMException('timed out', 'TimeoutError'))).toMatchObject({ kind: 'transient', code: 'timeout' });
  });

  it('retries what it does not know', () => {
    expect(defaultClassifier(new Error('???'))).toMatchObject({ kind: 'transient', code: 'unknown' });
    expect(defaultClassifier('a string')).toMatchObject({ kind: 'transient', message: 'a string' });
  });
});
