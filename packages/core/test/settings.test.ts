import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createFanout, defineFanout, type FanoutStore } from '../src/index.ts';
import { retryDelayMs } from '../src/runtime/child-runner.ts';

const definition = defineFanout({ name: 'settings_check', input: z.object({}), item: z.object({}), listItems: () => [], runItem: async () => null });
// The runtime's settings are checked when it is made, before anything reaches the store.
const store = {} as FanoutStore;

describe('runtime settings', () => {
  it('refuses lease renewals too rare to keep a live worker’s claims', () => {
    const make = (worker: { leaseMs: number; controlPollMs: number }) => () => createFanout({ store, boss: { connectionString: 'postgres://x@127.0.0.1:1/x' }, definitions: [definition], worker });
    expect(make({ leaseMs: 3000, controlPollMs: 1000 })).not.toThrow();
    expect(make({ leaseMs: 3000, controlPollMs: 1001 })).toThrow('worker.controlPollMs: must be at most a third of worker.leaseMs (1000), got 1001');
  });

  it('refuses task limits beyond what a task can hold', () => {
    expect(() => defineFanout({ name: 'x', input: z.object({}), item: z.object({}), listItems: () => [], runItem: async () => null, options: { maxFailures: 3_000_000_000 } })).toThrow(
      'options.maxFailures: must be an integer from 0 to 2147483647, got 3000000000',
    );
    expect(() => defineFanout({ name: 'x', input: z.object({}), item: z.object({}), listItems: () => [], runItem: async () => null, options: { deadlineMs: 9e15 } })).toThrow(
      /options\.deadlineMs: must be an integer from 1 to 31536000000/,
    );
  });

  it('waits as long as a Retry-After says, and says "too far" for one that is not a number of ms', () => {
    expect(retryDelayMs(definition, 1, 5000)).toBeGreaterThanOrEqual(5000);
    expect(retryDelayMs(definition, 1, undefined)).toBeLessThanOrEqual(10_000);
    expect(retryDelayMs(definition, 1, Number.POSITIVE_INFINITY)).toBe(Number.MAX_SAFE_INTEGER);
  });
});
