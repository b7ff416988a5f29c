import { describe, expect, it } from 'vitest';
import { DEFAULT_SCHEDULING, ticketsFor } from '../src/runtime/scheduler.ts';

describe('the jobs that serve work', () => {
  it("a retry's job is due when its items are by the database's clock, whatever this process's clock says", () => {
    const dbDue = Date.UTC(2026, 11, 3, 9, 0, 2, 400);
    // This process's clock is 3 s behind the database's: now + delay would be due too early.
    const processNow = dbDue - 2000 - 3000;
    const jobs = ticketsFor(DEFAULT_SCHEDULING, [{ taskId: 't', kind: 'k', tenant: 'a', delayMs: 2000, dueAt: dbDue }], processNow).get('k')!;
    expect(jobs).toHaveLength(1);
    expect(jobs[0]!.startAfter).toEqual(new Date(Date.UTC(2026, 11, 3, 9, 0, 3)));
    // Without the store's due time, the delay from now (rounded up to the second).
    const fromNow = ticketsFor(DEFAULT_SCHEDULING, [{ taskId: 't', kind: 'k', tenant: 'a', delayMs: 2000 }], processNow).get('k')!;
    expect(fromNow[0]!.startAfter).toEqual(new Date(Math.ceil((processNow + 2000) / 1000) * 1000));
    // Work due now goes to the tenant's window.
    expect(ticketsFor(DEFAULT_SCHEDULING, [{ taskId: 't', kind: 'k', tenant: 'a' }]).get('k')).toHaveLength(DEFAULT_SCHEDULING.window);
  });
});
