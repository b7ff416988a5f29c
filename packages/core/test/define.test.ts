import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { assertJobPayload, assertQueueName, defineFanout, FanoutError } from '../src/index.ts';

const base = { input: z.object({}), item: z.object({}), listItems: () => [], runItem: async () => null };

describe('names and payloads', () => {
  it('accepts [a-z0-9_] queue names', () => {
    expect(() => assertQueueName('asl_extract_2')).not.toThrow();
  });

  it('refuses a dot, saying why', () => {
    expect(() => assertQueueName('asl.extract')).toThrowError(/contains a dot; use underscores \(e\.g\. "asl_extract"\).*pg-boss/);
    try {
      assertQueueName('asl.extract');
    } catch (error) {
      expect(error).toBeInstanceOf(FanoutError);
      expect(error).toMatchObject({ code: 'invalid_queue_name', field: 'name' });
    }
  });

  it('refuses other characters and empty names', () => {
    expect(() => assertQueueName('Upper')).toThrowError(/must match \[a-z0-9_\]\+/);
    expect(() => assertQueueName('with-dash')).toThrowError(FanoutError);
    expect(() => assertQueueName('')).toThrowError(/non-empty/);
  });

  it('refuses job payloads over 1 KB at send time', () => {
    expect(() => assertJobPayload('q', { taskId: 'x', itemId: 'y' })).not.toThrow();
    expect(() => assertJobPayload('q', { blob: 'x'.repeat(2000) })).toThrowError(/payload for queue "q" is \d+ bytes; the limit is 1024/);
  });
});

describe('defineFanout', () => {
  it('applies the original defaults and names the queues', () => {
    const def = defineFanout({ name: 'asl_extract', ...base });
    expect(def.managerQueue).toBe('asl_extract_manager');
    expect(def.childQueue).toBe('asl_extract_items');
    expect(def.resolved.manager).toMatchObject({ retryLimit: 2, expireInSeconds: 3600 });
    expect(def.resolved.child).toMatchObject({ retryLimit: 3, retryDelaySeconds: 10, retryBackoff: true, expireInSeconds: 1800 });
  });

  it('names the field and the rule of a bad option', () => {
    expect(() => defineFanout({ name: 'x', ...base, options: { child: { retryLimit: -1 } } })).toThrowError(
      'options.child.retryLimit: must be an integer from 0 to 2147483647, got -1',
    );
    expect(() => defineFanout({ name: 'x', ...base, options: { child: { heartbeatSeconds: 5 } } })).toThrowError(/heartbeatSeconds: must be an integer from 10 to 2147483647/);
    expect(() => defineFanout({ name: 'x', ...base, options: { maxFailureRatio: 1.5 } })).toThrowError(/maxFailureRatio: must be between 0 and 1/);
    expect(() => defineFanout({ name: 'a.b', ...base })).toThrowError(/contains a dot/);
  });
});
