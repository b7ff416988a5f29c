import { describe, expect, it } from 'vitest';
import { applyEventCounts, compareStates, mergeTaskView, viewFromEvent } from '../../src/ui/state/task-merge.ts';
import { counts, event, task } from './fixtures.ts';

describe('compareStates: states only move forward', () => {
  it('orders by round first, even when the new round settled fewer items', () => {
    expect(compareStates(counts({ round: 2, succeeded: 50 }), counts({ round: 1, succeeded: 52, failed: 8 }))).toBeGreaterThan(0);
    expect(compareStates(counts({ round: 1, succeeded: 60 }), counts({ round: 2 }))).toBeLessThan(0);
  });

  it('then by settled items', () => {
    expect(compareStates(counts({ succeeded: 10, failed: 2 }), counts({ succeeded: 11 }))).toBeGreaterThan(0);
    expect(compareStates(counts({ succeeded: 10 }), counts({ succeeded: 10, cancelled: 1 }))).toBeLessThan(0);
  });

  it('then a terminal status wins over a running one at the same count', () => {
    expect(compareStates(counts({ status: 'completed', succeeded: 60 }), counts({ status: 'running', succeeded: 60 }))).toBeGreaterThan(0);
    expect(compareStates(counts({ status: 'stopping' }), counts({ status: 'running' }))).toBeGreaterThan(0);
    expect(compareStates(counts({ status: 'running' }), counts({ status: 'queued' }))).toBeGreaterThan(0);
  });

  it('then dispatch: dispatched, and more items dispatched', () => {
    expect(compareStates(counts({ dispatched: true, total: 10 }), counts({ dispatched: false, total: 10 }))).toBeGreaterThan(0);
    expect(compareStates(counts({ dispatched: false, total: 20 }), counts({ dispatched: false, total: 10 }))).toBeGreaterThan(0);
    expect(compareStates(counts(), counts())).toBe(0);
  });
});

describe('applyEventCounts', () => {
  it('applies a newer state and ignores an older or equal one (same object back)', () => {
    const held = task({ succeeded: 10 });
    const newer = applyEventCounts(held, counts({ succeeded: 12, failed: 1 }), Date.now());
    expect(newer).toMatchObject({ succeeded: 12, failed: 1 });
    expect(applyEventCounts(newer, counts({ succeeded: 11 }), Date.now())).toBe(newer);
    expect(applyEventCounts(newer, counts({ succeeded: 12, failed: 1 }), Date.now())).toBe(newer);
  });

  it('estimates the end of a task from the event until the server is asked', () => {
    const at = Date.parse('2026-11-30T14:05:00Z');
    const ended = applyEventCounts(task({ succeeded: 59 }), counts({ status: 'completed', succeeded: 60 }), at);
    expect(ended).toMatchObject({ status: 'completed', completedAt: '2026-11-30T14:05:00.000Z' });
  });

  it('starts a new round: its start, its settled count at the start, no end yet', () => {
    const at = Date.parse('2026-11-30T15:00:00Z');
    const finished = task({ status: 'completed', succeeded: 52, failed: 8, completedAt: '2026-11-30T14:05:00.000Z', error: null });
    const retried = applyEventCounts(finished, counts({ round: 2, succeeded: 52, failed: 5 }), at);
    expect(retried).toMatchObject({ round: 2, status: 'running', roundStartedAt: '2026-11-30T15:00:00.000Z', roundSettledAtStart: 57, completedAt: null });
  });

  it('gives a queued task its start when it runs', () => {
    const at = Date.parse('2026-11-30T14:00:05Z');
    const started = applyEventCounts(task({ status: 'queued', startedAt: null, roundStartedAt: null, dispatched: false, total: 0 }), counts({ status: 'running', total: 0, dispatched: false }), at);
    expect(started).toMatchObject({ status: 'running', startedAt: '2026-11-30T14:00:05.000Z', roundStartedAt: '2026-11-30T14:00:05.000Z' });
  });
});

describe('mergeTaskView: a list answer older than an event does not move the task back', () => {
  it('takes a newer or equal answer whole', () => {
    const held = task({ succeeded: 5 });
    const answer = task({ succeeded: 5, summary: 'renamed' });
    expect(mergeTaskView(held, answer)).toBe(answer);
    expect(mergeTaskView(undefined, answer)).toBe(answer);
  });

  it('keeps the held state of an older answer but takes its other fields', () => {
    const held = task({ status: 'completed', succeeded: 60, completedAt: '2026-11-30T14:05:00.000Z', summary: null });
    const stale = task({ succeeded: 40, summary: '60 papers', archivedAt: null });
    const merged = mergeTaskView(held, stale);
    expect(merged).toMatchObject({ status: 'completed', succeeded: 60, completedAt: '2026-11-30T14:05:00.000Z', summary: '60 papers' });
  });
});

describe('viewFromEvent', () => {
  it('builds a view of a task first seen submitted', () => {
    const e = event('task.submitted', { status: 'queued', total: 0, dispatched: false });
    expect(viewFromEvent(e)).toMatchObject({ id: e.taskId, status: 'queued', createdAt: '2026-11-30T14:01:00.000Z', summary: null, startedAt: null });
  });
});
