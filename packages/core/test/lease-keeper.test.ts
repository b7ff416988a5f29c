import { describe, expect, it } from 'vitest';
import { LeaseKeeper } from '../src/runtime/lease-keeper.ts';
import type { FanoutStore } from '../src/store/types.ts';

// Which claims a worker tells the store it is done with, with a store that only records what it
// is told (the store's side, against PostgreSQL, is in the conformance suite; a worker whose
// outcomes the store refuses is in the runtime's tests).
function keeper() {
  const ended: string[][] = [];
  const store = {
    renewLeases: async (held: ReadonlyArray<{ itemId: string }>) => held.map((h) => h.itemId),
    stoppedTasks: async () => [],
    endClaims: async (tokens: readonly string[]) => void ended.push([...tokens]),
  } as unknown as FanoutStore;
  const leases = new LeaseKeeper(store, { leaseMs: 60_000, pollMs: 60_000, onError: (error) => { throw error; } });
  return { leases, ended };
}

describe('LeaseKeeper', () => {
  it('ends a claim once every item of it is untracked, and never one whose outcome could not be stored', async () => {
    const { leases, ended } = keeper();
    const abort = () => {};
    leases.track('a1', { token: 'A', taskId: 't', abort });
    leases.track('a2', { token: 'A', taskId: 't', abort });
    leases.track('b1', { token: 'B', taskId: 't', abort });
    leases.track('c1', { token: 'C', taskId: 't', abort });
    leases.untrack('a1', 'A', true);
    await leases.flushEnded();
    expect(ended).toEqual([]); // a2 is still held under A
    leases.untrack('b1', 'B', false); // its outcome was lost: B lapses instead
    leases.untrack('a2', 'A', true);
    leases.untrack('c1', 'C', true);
    await leases.flushEnded();
    expect(ended).toEqual([['A', 'C']]);
    await leases.flushEnded();
    expect(ended).toHaveLength(1);
    leases.stop();
  });

  it('counts an item claimed again under a newer token against the newer one only', async () => {
    const { leases, ended } = keeper();
    leases.track('x', { token: 'old', taskId: 't', abort: () => {} });
    leases.track('x', { token: 'new', taskId: 't', abort: () => {} });
    leases.untrack('x', 'old', true); // the older attempt ending: no longer what is held
    await leases.flushEnded();
    expect(ended).toEqual([]); // "old" is not known to be stored: left to lapse
    leases.untrack('x', 'new', true);
    await leases.flushEnded();
    expect(ended).toEqual([['new']]);
    leases.stop();
  });
});
