import { FanoutError } from '../errors/errors.ts';

const QUEUE_NAME = /^[a-z0-9_]+$/;

/**
 * Queue and definition names are `[a-z0-9_]` only. A dot gets an error of its own because it is
 * the mistake the original pattern warns about: pg-boss treats names with dots specially
 * (routing), which silently truncates them.
 */
export function assertQueueName(name: string, field = 'name'): void {
  if (typeof name !== 'string' || name.length === 0) {
    throw new FanoutError('invalid_queue_name', `${field}: must be a non-empty string of [a-z0-9_]`, { field });
  }
  if (name.includes('.')) {
    throw new FanoutError(
      'invalid_queue_name',
      `${field}: "${name}" contains a dot; use underscores (e.g. "${name.replaceAll('.', '_')}"), because pg-boss treats dots in queue names as separators and would route jobs to a truncated name`,
      { field },
    );
  }
  if (!QUEUE_NAME.test(name)) {
    throw new FanoutError('invalid_queue_name', `${field}: "${name}" must match [a-z0-9_]+ (lower-case letters, digits, underscores)`, { field });
  }
  if (name.length > 50) {
    throw new FanoutError('invalid_queue_name', `${field}: "${name}" is longer than 50 characters`, { field });
  }
}

/** The most bytes a job payload may have: jobs carry ids, the data lives in item rows. */
export const MAX_JOB_PAYLOAD_BYTES = 1024;

export function assertJobPayload(queue: string, data: object): void {
  const bytes = Buffer.byteLength(JSON.stringify(data), 'utf8');
  if (bytes > MAX_JOB_PAYLOAD_BYTES) {
    throw new FanoutError(
      'payload_too_large',
      `job payload for queue "${queue}" is ${bytes} bytes; the limit is ${MAX_JOB_PAYLOAD_BYTES}. Jobs carry ids only: put the data in the item snapshot`,
      { field: 'data' },
    );
  }
}
