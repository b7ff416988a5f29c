import { ApiError, errorFromResponse, NETWORK_MESSAGE } from './errors.ts';

export interface ApiClientOptions {
  apiBase: string;
  /** The bearer token of every request. */
  token(): string | null;
  /** Called on any 401 answer: the token is no longer valid. */
  onUnauthorized(error: ApiError): void;
}

async function send(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (error) {
    if (error instanceof DOMException && error.name === 'AbortError') throw error;
    throw new ApiError(0, 'network', NETWORK_MESSAGE);
  }
}

/** The console's HTTP client: bearer token on every request, JSON in and out, errors as ApiError. */
export class ApiClient {
  readonly apiBase: string;
  readonly #options: ApiClientOptions;

  constructor(options: ApiClientOptions) {
    this.apiBase = options.apiBase;
    this.#options = options;
  }

  url(path: string): string {
    return this.apiBase + path;
  }

  headers(extra: Record<string, string> = {}): Record<string, string> {
    const token = this.#options.token();
    return { ...(token ? { authorization: `Bearer ${token}` } : {}), ...extra };
  }

  async #request(path: string, init: RequestInit): Promise<Response> {
    const res = await send(this.url(path), init);
    if (res.ok) return res;
    const error = await errorFromResponse(res);
    if (res.status === 401) this.#options.onUnauthorized(error);
    throw error;
  }

  async get<T>(path: string, signal?: AbortSignal): Promise<T> {
    const res = await this.#request(path, { headers: this.headers({ accept: 'application/json' }), signal: signal ?? null });
    return (await res.json()) as T;
  }

  /** POST, PUT or DELETE with an optional JSON body; a 204 answers undefined. */
  async send<T>(method: 'POST' | 'DELETE', path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
    const res = await this.#request(path, {
      method,
      headers: this.headers({ accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers }),
      body: body === undefined ? null : JSON.stringify(body),
    });
    if (res.status === 204) return undefined as T;
    const text = await res.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /** Uploads one file as multipart/form-data under the field name `file`. */
  async upload<T>(path: string, file: File, signal?: AbortSignal): Promise<T> {
    const form = new FormData();
    form.append('file', file);
    const res = await this.#request(path, { method: 'POST', headers: this.headers({ accept: 'application/json' }), body: form, signal: signal ?? null });
    return (await res.json()) as T;
  }

  /** Fetches a file (the token is a header, not a cookie, so a plain link cannot) and saves it. */
  async download(path: string, fallbackName: string): Promise<string> {
    const res = await this.#request(path, { headers: this.headers() });
    const blob = await res.blob();
    const name = fileNameOf(res.headers.get('content-disposition')) ?? fallbackName;
    const href = URL.createObjectURL(blob);
    const a = document.createElement('a');
    a.href = href;
    a.download = name;
    document.body.append(a);
    a.click();
    a.remove();
    // The click has started the download; the URL may go once the event loop has moved on.
    setTimeout(() => URL.revokeObjectURL(href), 10_000);
    return name;
  }
}

/** The file name of a Content-Disposition header, if any (RFC 6266 `filename*` first). */
export function fileNameOf(disposition: string | null): string | null {
  if (!disposition) return null;
  const star = /filename\*\s*=\s*(?:UTF-8|utf-8)''([^;]+)/.exec(disposition);
  if (star?.[1]) {
    try {
      return decodeURIComponent(star[1].trim());
    } catch {
      // fall through to the plain parameter
    }
  }
  const plain = /filename\s*=\s*("([^"]*)"|[^;]+)/.exec(disposition);
  const name = plain?.[2] ?? plain?.[1]?.trim();
  return name ? name.replace(/[/\\]/g, '_') : null;
}
