import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { TaskView } from '../../src/ui/api/types.ts';
import { TaskStore, type StoreChanges } from '../../src/ui/state/task-store.ts';
import { event, task } from './fixtures.ts';

const idOf = (n: number) => `0193${String(n).padStart(4, '0')}-0000-7000-8000-000000000000`;

describe('TaskStore', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  function store(fetched: TaskView[] = []) {
    const fetchTask = vi.fn(async (id: string) => fetched.find((t) => t.id === id) ?? Promise.reject(new Error('404')));
    const s = new TaskStore({ fetchTask });
    const batches: StoreChanges[] = [];
    s.subscribe((c) => batches.push(c));
    return { s, batches, fetchTask };
  }

  it('renders 30 tasks moving at once in a handful of batches, not once per event', async () => {
    const { s, batches } = store();
    for (let i = 0; i < 30; i++) s.upsert(task({ id: idOf(i), total: 100 }));
    await vi.advanceTimersByTimeAsync(300);
    batches.length = 0;
    // 30 tasks x 20 events over one second
    for (let step = 1; step <= 20; step++) {
      for (let i = 0; i < 30; i++) s.applyEvent(event('task.progress', { total: 100, succeeded: step }, Date.now(), idOf(i)));
      await vi.advanceTimersByTimeAsync(50);
    }
    await vi.advanceTimersByTimeAsync(300);
    expect(batches.length).toBeLessThanOrEqual(6);
    for (let i = 0; i < 30; i++) expect(s.get(idOf(i))!.succeeded).toBe(20);
  });

  it('ignores an older event and reports the tasks seen to end', async () => {
    const { s, batches } = store();
    s.upsert(task({ succeeded: 50 }));
    s.applyEvent(event('task.progress', { succeeded: 40 }));
    expect(s.get(task().id)!.succeeded).toBe(50);
    s.applyEvent(event('task.completed', { status: 'completed', succeeded: 58, failed: 2 }));
    await vi.advanceTimersByTimeAsync(300);
    const ended = batches.flatMap((b) => b.ended);
    expect(ended.map((t) => [t.id, t.status])).toEqual([[task().id, 'completed']]);
    // Seeing the same ending again is no new ending.
    s.applyEvent(event('task.completed', { status: 'completed', succeeded: 58, failed: 2 }));
    await vi.advanceTimersByTimeAsync(300);
    expect(batches.flatMap((b) => b.ended)).toHaveLength(1);
  });

  it('reports a known task whose status changed: ended, or taken back to running by a retry made elsewhere', async () => {
    const { s, batches } = store([task({ status: 'running', round: 2, failed: 0, succeeded: 58 })]);
    s.upsert(task({ status: 'running', succeeded: 50 }));
    s.applyEvent(event('task.progress', { succeeded: 55 }));
    await vi.advanceTimersByTimeAsync(300);
    expect(batches.flatMap((b) => b.moved)).toEqual([]);
    s.applyEvent(event('task.failed', { status: 'failed', succeeded: 58, failed: 2 }));
    await vi.advanceTimersByTimeAsync(300);
    expect(batches.flatMap((b) => b.moved).map((t) => t.status)).toEqual(['failed']);
    s.applyEvent(event('task.progress', { status: 'running', round: 2, succeeded: 58, failed: 0 }));
    await vi.advanceTimersByTimeAsync(300);
    expect(batches.flatMap((b) => b.moved).map((t) => t.status)).toEqual(['failed', 'running']);
    expect(batches.flatMap((b) => b.ended).map((t) => t.status)).toEqual(['failed']);
  });

  it('adds a task first seen submitted and asks the server for the rest of it', async () => {
    const full = task({ id: idOf(7), status: 'queued', summary: '12 papers', total: 0, dispatched: false });
    const { s, batches, fetchTask } = store([full]);
    s.applyEvent(event('task.submitted', { status: 'queued', total: 0, dispatched: false }, Date.now(), idOf(7)));
    await vi.advanceTimersByTimeAsync(300);
    expect(batches.flatMap((b) => b.submitted).map((t) => t.id)).toEqual([idOf(7)]);
    expect(fetchTask).toHaveBeenCalledWith(idOf(7));
    expect(s.get(idOf(7))!.summary).toBe('12 papers');
  });

  it('asks once about a task first seen moving (its submit event was superseded) and reports it as new', async () => {
    const full = task({ id: idOf(8), succeeded: 3, summary: '6 papers' });
    const { s, batches, fetchTask } = store([full]);
    s.applyEvent(event('task.progress', { succeeded: 2 }, Date.now(), idOf(8)));
    s.applyEvent(event('task.progress', { succeeded: 4 }, Date.now(), idOf(8)));
    await vi.advanceTimersByTimeAsync(300);
    expect(fetchTask).toHaveBeenCalledTimes(1);
    expect(batches.flatMap((b) => b.submitted).map((t) => t.id)).toEqual([idOf(8)]);
    // The newest state wins over the answer that left the server before it.
    expect(s.get(idOf(8))).toMatchObject({ succeeded: 4, summary: '6 papers' });
  });

  it('keeps events of tasks not loaded yet and applies them when a list brings the task', () => {
    const { s } = store();
    s.applyEvent(event('task.completed', { status: 'completed', succeeded: 60 }));
    expect(s.get(task().id)).toBeUndefined();
    const held = s.upsert(task({ succeeded: 30 })); // the list answer left the server before the ending
    expect(held).toMatchObject({ status: 'completed', succeeded: 60 });
  });

  it('asks the server again when a new round begins', async () => {
    const retried = task({ round: 2, status: 'running', succeeded: 52, failed: 5, roundSettledAtStart: 57, roundStartedAt: '2026-11-30T15:00:00.000Z' });
    const { s, fetchTask } = store([retried]);
    s.upsert(task({ status: 'completed', succeeded: 52, failed: 8, completedAt: '2026-11-30T14:05:00.000Z' }));
    s.applyEvent(event('task.progress', { round: 2, succeeded: 52, failed: 5 }));
    await vi.advanceTimersByTimeAsync(10);
    expect(fetchTask).toHaveBeenCalledTimes(1);
    expect(s.get(task().id)).toMatchObject({ round: 2, roundSettledAtStart: 57, roundStartedAt: '2026-11-30T15:00:00.000Z' });
  });

  it('forgets a deleted task', async () => {
    const { s } = store();
    s.upsert(task());
    s.remove(task().id);
    expect(s.get(task().id)).toBeUndefined();
  });
});
