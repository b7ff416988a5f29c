import { PermanentError, TransientError } from './errors.ts';

/** What the runtime does with a child's error. */
export interface Classification {
  kind: 'permanent' | 'transient';
  /** Stable reason recorded on the item, e.g. `http_429`, `network`, `validation`. */
  code: string;
  message: string;
  /** Do not retry sooner than this. */
  retryAfterMs?: number;
}

export type ErrorClassifier = (error: unknown) => Classification;

// Node and undici network error codes that say "the other side or the wire failed",
// not "the request was wrong".
const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CLOSED',
]);

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}

/**
 * Parses a `Retry-After` value (seconds, or an HTTP date) into milliseconds from `now`.
 * Returns undefined for a missing or unreadable value.
 */
export function parseRetryAfter(value: unknown, now = Date.now()): number | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value * 1000 : undefined;
  const text = String(value).trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

function httpStatusOf(error: object): number | undefined {
  const candidate =
    (error as { status?: unknown }).status ??
    (error as { statusCode?: unknown }).statusCode ??
    (error as { response?: { status?: unknown } }).response?.status;
  return typeof candidate === 'number' && candidate >= 100 && candidate <= 599 ? candidate : undefined;
}

function retryAfterOf(error: object): number | undefined {
  const direct = (error as { retryAfterMs?: unknown }).retryAfterMs;
  if (typeof direct === 'number') return direct;
  const headers =
    (error as { headers?: unknown }).headers ?? (error as { response?: { headers?: unknown } }).response?.headers;
  if (!headers) return undefined;
  if (typeof (headers as Headers).get === 'function') return parseRetryAfter((headers as Headers).get('retry-after'));
  const record = headers as Record<string, unknown>;
  return parseRetryAfter(record['retry-after'] ?? record['Retry-After']);
}

function codeOf(error: object): string | undefined {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * The default classifier.
 *
 * - {@link PermanentError} and {@link TransientError} say what they are.
 * - Validation errors (zod's `ZodError`, or any error named `ValidationError`) are permanent.
 * - HTTP errors (an error with `status`, `statusCode` or `response.status`): 408 and 429 are
 *   transient and honour `Retry-After`; other 4xx are permanent; 5xx are transient (a 503 honours
 *   `Retry-After` too).
 * - Network errors (`ECONNRESET`, `ETIMEDOUT`, undici socket errors, `fetch failed`) and
 *   timeouts (`TimeoutError`, `AbortError`) are transient.
 * - Anything else is transient: an unknown failure is retried, and counted as failed when its
 *   attempts run out, rather than dropped on the first try.
 */
export const defaultClassifier: ErrorClassifier = (error) => {
  const message = messageOf(error);
  if (error instanceof PermanentError) return { kind: 'permanent', code: error.code, message };
  if (error instanceof TransientError) {
    return error.retryAfterMs === undefined
      ? { kind: 'transient', code: error.code, message }
      : { kind: 'transient', code: error.code, message, retryAfterMs: error.retryAfterMs };
  }
  if (typeof error !== 'object' || error === null) return { kind: 'transient', code: 'unknown', message };

  const name = (error as { name?: unknown }).name;
  if (name === 'ZodError' || name === 'ValidationError') return { kind: 'permanent', code: 'validation', message };

  const status = httpStatusOf(error);
  if (status !== undefined) {
    if (status === 408 || status === 429) {
      const retryAfterMs = retryAfterOf(error);
      return retryAfterMs === undefined
        ? { kind: 'transient', code: `http_${status}`, message }
        : { kind: 'transient', code: `http_${status}`, message, retryAfterMs };
    }
    if (status >= 500) {
      // A 503 may say when the service is back (RFC 9110 §10.2.3).
      const retryAfterMs = status === 503 ? retryAfterOf(error) : undefined;
      return retryAfterMs === undefined
        ? { kind: 'transient', code: `http_${status}`, message }
        : { kind: 'transient', code: `http_${status}`, message, retryAfterMs };
    }
    if (status >= 400) return { kind: 'permanent', code: `http_${status}`, message };
  }

  if (name === 'TimeoutError' || name === 'AbortError') return { kind: 'transient', code: 'timeout', message };
  const code = codeOf(error) ?? codeOf((error as { cause?: object }).cause ?? {});
  if (code && NETWORK_CODES.has(code)) return { kind: 'transient', code: 'network', message };
  if (name === 'TypeError' && message === 'fetch failed') return { kind: 'transient', code: 'network', message };

  return { kind: 'transient', code: 'unknown', message };
};
