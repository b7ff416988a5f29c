/** One rule a request broke, as the API reports it: `field` is like `body.input.documentIds`. */
export interface Issue {
  field: string;
  rule: string;
  message: string;
}

/** A refused or failed request: the API's error body, or `network` when the server was not reached. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly issues: Issue[];

  constructor(status: number, code: string, message: string, issues: Issue[] = []) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.issues = issues;
  }
}

export const NETWORK_MESSAGE = 'Cannot reach the server. Check your connection; the console retries live updates by itself.';

/** Reads an error answer into an ApiError; a body that is not the API's error shape still gives a message. */
export async function errorFromResponse(res: Response): Promise<ApiError> {
  let body: unknown = null;
  try {
    body = await res.json();
  } catch {
    // Not JSON (a proxy's error page): the status line is all there is.
  }
  const error = (body as { error?: { code?: unknown; message?: unknown; issues?: unknown } } | null)?.error;
  const code = typeof error?.code === 'string' ? error.code : `http_${res.status}`;
  const message = typeof error?.message === 'string' && error.message ? error.message : `The server answered ${res.status}${res.statusText ? ` ${res.statusText}` : ''}.`;
  const issues = Array.isArray(error?.issues) ? (error.issues as Issue[]).filter((i) => i && typeof i.field === 'string') : [];
  return new ApiError(res.status, code, message, issues);
}

/** A message for a person, whatever was thrown. */
export function describeError(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  if (error instanceof Error && error.message) return error.message;
  return 'Something went wrong.';
}

export const isAbort = (error: unknown): boolean => error instanceof DOMException && error.name === 'AbortError';
