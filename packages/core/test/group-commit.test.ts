import { describe, expect, it } from 'vitest';
import { GroupCommit } from '../src/runtime/group-commit.ts';

// The group commit's scheduling, with a commit function standing in for the store (the store
// itself is exercised against PostgreSQL by the conformance suite and the demo's tests).
interface Entry {
  item: string;
  value: string;
}

function recorder(decide: (batch: readonly Entry[]) => 'ok' | Error = () => 'ok') {
  const batches: Entry[][] = [];
  const commit = async (batch: readonly Entry[]) => {
    batches.push([...batch]);
    const verdict = decide(batch);
    if (verdict instanceof Error) throw verdict;
    return new Set(batch.filter((e) => e.value !== 'turned-down').map((e) => e.item));
  };
  return { batches, commit };
}

const entry = (item: string, value = 'v'): Entry => ({ item, value });

describe('GroupCommit', () => {
  it('commits what was pushed in the same tick together, and answers each entry', async () => {
    const { batches, commit } = recorder();
    const group = new GroupCommit<Entry>({ commit, key: (e) => e.item, maxBatch: 10, maxFlushes: 1, retryDelayMs: 1 });
    const answers = await Promise.all([group.push(entry('a')), group.push(entry('b')), group.push(entry('c', 'turned-down'))]);
    expect(answers).toEqual([true, true, false]);
    expect(batches).toEqual([[entry('a'), entry('b'), entry('c', 'turned-down')]]);
  });

  it('never puts two entries for the same item in one batch', async () => {
    const { batches, commit } = recorder();
    const group = new GroupCommit<Entry>({ commit, key: (e) => e.item, maxBatch: 10, maxFlushes: 1, retryDelayMs: 1 });
    await Promise.all([group.push(entry('a', 'stale')), group.push(entry('b')), group.push(entry('a', 'live'))]);
    expect(batches).toEqual([[entry('a', 'stale'), entry('b')], [entry('a', 'live')]]);
  });

  it('retries a failed commit once, then isolates the entry the store cannot take', async () => {
    let failures = 1;
    const { batches, commit } = recorder((batch) => {
      if (failures-- > 0) return new Error('connection lost');
      return batch.some((e) => e.value === 'poison') ? new Error('invalid input syntax') : 'ok';
    });
    const group = new GroupCommit<Entry>({ commit, key: (e) => e.item, maxBatch: 10, maxFlushes: 1, retryDelayMs: 1 });
    const items = ['a', 'b', 'c', 'd', 'e', 'f'];
    const answers = items.map((item) => group.push(entry(item, item === 'e' ? 'poison' : 'v')).then(
      (accepted) => accepted,
      (error: Error) => error.message,
    ));
    expect(await Promise.all(answers)).toEqual([true, true, true, true, 'invalid input syntax', true]);
    // a lost connection, the retry (poisoned), then halves narrowing down to e.
    expect(batches.length).toBeLessThanOrEqual(2 + 2 * Math.ceil(Math.log2(items.length)));
    await group.idle();
  });

  it('gives up on the whole batch at once when the store itself keeps failing', async () => {
    const { batches, commit } = recorder(() => new Error('database is down'));
    const group = new GroupCommit<Entry>({ commit, key: (e) => e.item, maxBatch: 100, maxFlushes: 1, retryDelayMs: 1 });
    const answers = Array.from({ length: 64 }, (_, i) => group.push(entry(`i${i}`)).catch((error: Error) => error.message));
    expect(new Set(await Promise.all(answers))).toEqual(new Set(['database is down']));
    expect(batches).toHaveLength(4); // the batch, its retry, and its two halves
  });

  it('idle() waits for everything pushed so far', async () => {
    const { batches, commit } = recorder();
    const group = new GroupCommit<Entry>({ commit, key: (e) => e.item, maxBatch: 2, maxFlushes: 1, retryDelayMs: 1 });
    for (const item of ['a', 'b', 'c', 'd', 'e']) void group.push(entry(item));
    await group.idle();
    expect(batches.flat().map((e) => e.item)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(batches.every((b) => b.length <= 2)).toBe(true);
  });
});
