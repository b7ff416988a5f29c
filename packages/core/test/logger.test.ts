import { describe, expect, it } from 'vitest';
import { errorFields } from '../src/runtime/logger.ts';

describe('errorFields', () => {
  it('reads the message, code and context of the plain objects pg-boss reports, not "[object Object]"', () => {
    const original = Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });
    // What pg-boss 12 emits for a failed fetch or supervision (manager.js): a copy, not the Error.
    const reported = { ...original, message: original.message, stack: original.stack, queue: 'asl_extract_child', worker: 'w-1' };
    const fields = errorFields(reported);
    expect(fields).toMatchObject({ error: 'Connection terminated unexpectedly', errorCode: 'ECONNRESET', queue: 'asl_extract_child', worker: 'w-1' });
    expect(fields.stack).toContain('Connection terminated');
    expect(JSON.stringify(fields)).not.toContain('[object Object]');
  });

  it('names a refused connection: an AggregateError with an empty message reports its errors', () => {
    const refused = new AggregateError(
      [Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }), Object.assign(new Error('connect ECONNREFUSED ::1:5432'), { code: 'ECONNREFUSED' })],
      '',
    );
    Object.assign(refused, { code: 'ECONNREFUSED' });
    expect(errorFields(refused)).toMatchObject({ error: 'connect ECONNREFUSED 127.0.0.1:5432; connect ECONNREFUSED ::1:5432', errorName: 'AggregateError', errorCode: 'ECONNREFUSED' });
  });

  it('keeps PostgreSQL’s code, table and constraint, and the cause', () => {
    const pgError = Object.assign(new Error('duplicate key value violates unique constraint "fanout_item_key"'), { code: '23505', table: 'fanout_item', constraint: 'fanout_item_key', severity: 'ERROR' });
    const wrapped = new Error('settle failed', { cause: pgError });
    expect(errorFields(pgError)).toMatchObject({ errorCode: '23505', table: 'fanout_item', constraint: 'fanout_item_key', severity: 'ERROR' });
    expect(errorFields(wrapped)).toMatchObject({ error: 'settle failed', cause: 'duplicate key value violates unique constraint "fanout_item_key"' });
  });

  it('describes what is not an Error at all', () => {
    expect(errorFields('boom')).toEqual({ error: 'boom' });
    expect(errorFields({ reason: 'nope' })).toEqual({ error: '{"reason":"nope"}' });
    expect(errorFields(undefined)).toEqual({ error: 'undefined' });
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(errorFields(circular).error).toBe('an object with keys self');
  });
});
