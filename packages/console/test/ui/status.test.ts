import { describe, expect, it } from 'vitest';
import { canArchive, canCancel, canDelete, canRetryFailed, canRetryItem, endingText, presentStatus, progressLabel, progressText, retryCount } from '../../src/ui/state/status.ts';
import type { ItemCounts, ItemView } from '../../src/ui/api/types.ts';
import { task } from './fixtures.ts';

const itemCounts = (over: Partial<ItemCounts> = {}): ItemCounts => ({ queued: 0, waitingRetry: 0, nextRetryAt: null, running: 0, succeeded: 0, failed: 0, retryableFailed: 0, cancelled: 0, total: 0, ...over });

describe('honest states', () => {
  it('a cancelled task shows settled/total and "cancelled", never 100%', () => {
    const t = task({ status: 'cancelled', stopReason: 'cancelled', succeeded: 14, failed: 1, cancelled: 15, total: 30 });
    expect(progressLabel(t)).toBe('30/30');
    expect(presentStatus(t)).toEqual({ label: 'cancelled', tone: 'muted', note: null });
  });

  it('an all-failed task is not a green "completed"', () => {
    const t = task({ status: 'completed', failed: 5, total: 5 });
    expect(presentStatus(t)).toEqual({ label: 'completed', tone: 'bad', note: 'all 5 failed' });
  });

  it('completed with failures is a warning that says how many', () => {
    expect(presentStatus(task({ status: 'completed', succeeded: 58, failed: 2 }))).toEqual({ label: 'completed', tone: 'warn', note: '2 failed' });
    expect(presentStatus(task({ status: 'completed', succeeded: 60 }))).toEqual({ label: 'completed', tone: 'ok', note: null });
    expect(progressLabel(task({ status: 'completed', succeeded: 58, failed: 2 }))).toBe('100%');
  });

  it('a queued task shows "queued", not "running 0%"', () => {
    const t = task({ status: 'queued', total: 0, dispatched: false });
    expect(progressLabel(t)).toBe('queued');
    expect(presentStatus(t).label).toBe('queued');
  });

  it('a stopping task says so, and why', () => {
    const t = task({ status: 'stopping', stopReason: 'cancelled', succeeded: 40 });
    expect(presentStatus(t)).toEqual({ label: 'stopping', tone: 'warn', note: 'cancel requested' });
    expect(progressLabel(t)).toBe('40/60');
  });

  it('a failed task says why it stopped and shows settled/total', () => {
    const t = task({ status: 'failed', stopReason: 'failure_threshold', succeeded: 9, failed: 11, cancelled: 20, total: 40 });
    expect(presentStatus(t)).toEqual({ label: 'failed', tone: 'bad', note: 'too many failures' });
    expect(progressLabel(t)).toBe('40/40');
  });

  it('a running task never shows 100% and floors its percentage', () => {
    expect(progressLabel(task({ succeeded: 59, failed: 0, total: 60 }))).toBe('98%');
    expect(progressLabel(task({ succeeded: 60, total: 60 }))).toBe('99%');
    expect(progressLabel(task({ total: 0, dispatched: false }))).toBe('starting');
    expect(presentStatus(task({ dispatched: false })).note).toBe('dispatching');
  });
});

describe('words for assistive technology', () => {
  it('tells the bar in words', () => {
    expect(progressText(task({ succeeded: 40, failed: 2 }))).toBe('42 of 60 settled: 40 succeeded, 2 failed');
    expect(progressText(task({ succeeded: 1, cancelled: 3, dispatched: false }))).toBe('4 of 60 settled: 1 succeeded, 3 cancelled (still dispatching)');
    expect(progressText(task({ status: 'queued', total: 0 }))).toBe('queued, 0 of 0 settled: 0 succeeded');
  });

  it('announces an ending', () => {
    expect(endingText(task({ status: 'completed', succeeded: 58, failed: 2 }))).toBe('Task 0193abcd completed: 58 succeeded, 2 failed.');
    expect(endingText(task({ status: 'failed', stopReason: 'deadline', succeeded: 3, cancelled: 57 }))).toBe('Task 0193abcd failed (deadline passed): 3 succeeded, 57 cancelled.');
  });
});

describe('which actions are offered', () => {
  it('cancel while queued or running only', () => {
    expect(canCancel(task({ status: 'queued' }))).toBe(true);
    expect(canCancel(task({ status: 'running' }))).toBe(true);
    expect(canCancel(task({ status: 'stopping' }))).toBe(false);
    expect(canCancel(task({ status: 'completed' }))).toBe(false);
  });

  it('retry failed only for a finished task with retryable failures', () => {
    expect(canRetryFailed(task({ status: 'completed' }), itemCounts({ failed: 3, retryableFailed: 3 }))).toBe(true);
    expect(canRetryFailed(task({ status: 'failed' }), itemCounts({ failed: 3, retryableFailed: 1 }))).toBe(true);
    expect(canRetryFailed(task({ status: 'completed' }), itemCounts({ failed: 3, retryableFailed: 0 }))).toBe(false);
    expect(canRetryFailed(task({ status: 'running' }), itemCounts({ failed: 3, retryableFailed: 3 }))).toBe(false);
    expect(canRetryFailed(task({ status: 'cancelled' }), itemCounts({ failed: 3, retryableFailed: 3 }))).toBe(false);
    expect(canRetryFailed(task({ status: 'completed' }), null)).toBe(false);
  });

  it('a retry counts what the server brings back: with the retryable failures, the items a stop by the deadline or the failure tolerance cancelled; nothing once the listing was cut', () => {
    const counts = itemCounts({ failed: 4, retryableFailed: 1, cancelled: 24 });
    expect(retryCount(task({ status: 'failed', stopReason: 'deadline' }), counts)).toEqual({ failed: 1, notRun: 24 });
    expect(retryCount(task({ status: 'failed', stopReason: 'failure_threshold' }), counts)).toEqual({ failed: 1, notRun: 24 });
    // A cancel by a person is final.
    expect(retryCount(task({ status: 'cancelled', stopReason: 'cancelled' }), counts)).toEqual({ failed: 0, notRun: 0 });
    // Stopped by its tolerance with no retryable failure: its cancelled items are still offered.
    const stopped = task({ status: 'failed', stopReason: 'failure_threshold' });
    expect(canRetryFailed(stopped, itemCounts({ failed: 2, retryableFailed: 0, cancelled: 47 }))).toBe(true);
    // Its listing cut short: the server refuses any retry, so none is offered, nor one item's.
    const cut = task({ status: 'failed', stopReason: 'deadline', dispatchCut: true });
    expect(canRetryFailed(cut, counts)).toBe(false);
    expect(canRetryItem(cut, { status: 'failed' } as ItemView)).toBe(false);
    expect(presentStatus(cut).note).toBe('deadline passed, stopped before all its items were listed');
    expect(presentStatus(task({ status: 'cancelled', dispatchCut: true })).note).toBe('stopped before all its items were listed');
  });

  it('per-item retry on failed items of a finished task', () => {
    const failed = { status: 'failed' } as ItemView;
    expect(canRetryItem(task({ status: 'completed' }), failed)).toBe(true);
    expect(canRetryItem(task({ status: 'running' }), failed)).toBe(false);
    expect(canRetryItem(task({ status: 'completed' }), { status: 'succeeded' } as ItemView)).toBe(false);
  });

  it('archive and delete only finished tasks; archive once', () => {
    expect(canArchive(task({ status: 'completed' }))).toBe(true);
    expect(canArchive(task({ status: 'completed', archivedAt: '2026-11-30T15:00:00Z' }))).toBe(false);
    expect(canArchive(task({ status: 'running' }))).toBe(false);
    expect(canDelete(task({ status: 'cancelled' }))).toBe(true);
    expect(canDelete(task({ status: 'stopping' }))).toBe(false);
  });
});
