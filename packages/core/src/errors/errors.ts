/**
 * Every error Fanout raises itself is a {@link FanoutError} with a stable `code`, so callers
 * (and the shared HTTP layer) branch on codes, never on messages.
 */
export type FanoutErrorCode =
  | 'invalid_argument'
  | 'invalid_queue_name'
  | 'payload_too_large'
  | 'not_found'
  | 'conflict'
  | 'unknown_definition'
  | 'aborted'
  | 'not_started'
  /** The database lacks a migration the store needs (the message names it). */
  | 'schema_outdated';

/** One problem with an argument: where (`input.ruleSetId`, `input.documentIds.3`), the rule broken, and what to do. */
export interface FanoutIssue {
  field: string;
  /** The rule broken, e.g. `not_found`, `too_small`. */
  rule: string;
  message: string;
}

export class FanoutError extends Error {
  override name = 'FanoutError';
  readonly code: FanoutErrorCode;
  /** The input field the error is about, when there is one (e.g. `name`, `input.documentIds`). */
  readonly field: string | undefined;
  /**
   * A conflict that passes by itself (the same call succeeds a moment later): about how long to
   * wait. The HTTP layer answers it with a `Retry-After` header.
   */
  readonly retryAfterMs: number | undefined;
  /** Every problem found, when there are several (`field` names the first): a definition's `checkInput`. */
  readonly issues: readonly FanoutIssue[] | undefined;

  constructor(code: FanoutErrorCode, message: string, options?: { cause?: unknown; field?: string; retryAfterMs?: number; issues?: readonly FanoutIssue[] }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.field = options?.field;
    this.retryAfterMs = options?.retryAfterMs;
    this.issues = options?.issues;
  }
}

/**
 * A failure that will not get better by retrying: bad input, a corrupt file, a 4xx answer.
 * The item is recorded as failed at once and its job is not retried.
 */
export class PermanentError extends Error {
  override name = 'PermanentError';
  /** A short machine-readable reason, e.g. `corrupt_pdf`. */
  readonly code: string;

  constructor(message: string, options?: { cause?: unknown; code?: string }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = options?.code ?? 'permanent';
  }
}

/**
 * A failure that may pass on a later attempt: 429, 5xx, a network error, a timeout.
 * The item is retried with backoff (never sooner than `retryAfterMs`) until its attempts run out;
 * the final attempt's failure counts as failed.
 */
export class TransientError extends Error {
  override name = 'TransientError';
  readonly code: string;
  /** The earliest moment to retry, e.g. from a `Retry-After` header. */
  readonly retryAfterMs: number | undefined;

  constructor(message: string, options?: { cause?: unknown; code?: string; retryAfterMs?: number }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = options?.code ?? 'transient';
    this.retryAfterMs = options?.retryAfterMs;
  }
}
