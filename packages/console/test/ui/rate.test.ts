import { describe, expect, it } from 'vitest';
import { elapsedMs, roundRate } from '../../src/ui/state/rate.ts';
import { task } from './fixtures.ts';

const at = (iso: string) => Date.parse(iso);

describe('roundRate', () => {
  it('is settled items of the round over the round\'s time', () => {
    const t = task({ succeeded: 38, failed: 2, roundStartedAt: '2026-11-30T14:00:00Z' });
    expect(roundRate(t, at('2026-11-30T14:00:20Z'))).toBe(2);
  });

  it('measures a retry round on its own, from the settled count at its start', () => {
    const t = task({ round: 2, succeeded: 55, failed: 3, roundSettledAtStart: 52, roundStartedAt: '2026-11-30T15:00:00Z', completedAt: null });
    expect(roundRate(t, at('2026-11-30T15:00:10Z'))).toBeCloseTo(0.6);
  });

  it('stops the clock at completedAt', () => {
    const t = task({ status: 'completed', succeeded: 60, completedAt: '2026-11-30T14:01:00Z' });
    expect(roundRate(t, at('2026-11-30T18:00:00Z'))).toBe(1);
  });

  it('ignores a completedAt from before the round began (an earlier round)', () => {
    const t = task({ round: 2, succeeded: 10, roundSettledAtStart: 0, roundStartedAt: '2026-11-30T15:00:00Z', completedAt: '2026-11-30T14:01:00Z' });
    expect(roundRate(t, at('2026-11-30T15:00:10Z'))).toBe(1);
  });

  it('counts the items that ran, not the ones a stop cancelled at once', () => {
    const cancelled = task({ status: 'cancelled', stopReason: 'cancelled', succeeded: 3, cancelled: 357, roundStartedAt: '2026-11-30T14:00:00Z', completedAt: '2026-11-30T14:00:03Z' });
    expect(roundRate(cancelled, at('2026-11-30T15:00:00Z'))).toBe(1);
    // A later round of a task with items cancelled: what was cancelled before it is not known.
    expect(roundRate({ ...cancelled, round: 2, roundSettledAtStart: 300 }, at('2026-11-30T15:00:00Z'))).toBeNull();
  });

  it('says nothing before the round started or in its first second', () => {
    expect(roundRate(task({ roundStartedAt: null }), Date.now())).toBeNull();
    expect(roundRate(task({ succeeded: 3 }), at('2026-11-30T14:00:00.500Z'))).toBeNull();
  });
});

describe('elapsedMs', () => {
  it('runs from the start to the end, or to now', () => {
    expect(elapsedMs(task({ startedAt: '2026-11-30T14:00:00Z', completedAt: '2026-11-30T14:02:00Z' }), 0)).toBe(120_000);
    expect(elapsedMs(task({ startedAt: '2026-11-30T14:00:00Z' }), at('2026-11-30T14:00:30Z'))).toBe(30_000);
    expect(elapsedMs(task({ startedAt: null }), Date.now())).toBeNull();
  });
});
