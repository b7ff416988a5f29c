import { describe, expect, it } from 'vitest';
import type { TaskView } from '../../src/ui/api/types.ts';
import { withNewTasks } from '../../src/ui/state/tabs.ts';
import { task } from './fixtures.ts';

const at = (n: number): TaskView => task({ id: `0193${String(n).padStart(4, '0')}-0000-7000-8000-000000000000`, createdAt: new Date(Date.UTC(2026, 10, 30, 12, n)).toISOString() });

describe('tasks first seen live join the list in their place', () => {
  const byId = (tasks: TaskView[]) => (id: string) => tasks.find((t) => t.id === id);

  it('puts a newer task on top and one between two loaded tasks between them', () => {
    const all = [at(5), at(3), at(1), at(6), at(2)];
    const list = { ids: [at(5).id, at(3).id, at(1).id], nextCursor: 'more' };
    expect(withNewTasks(list, [at(6), at(2)], byId(all)).ids).toEqual([at(6).id, at(5).id, at(3).id, at(2).id, at(1).id]);
  });

  it('leaves out a task older than the loaded pages while more pages remain, and keeps it when none remain', () => {
    const all = [at(5), at(3), at(1)];
    expect(withNewTasks({ ids: [at(5).id, at(3).id], nextCursor: 'more' }, [at(1)], byId(all)).ids).toEqual([at(5).id, at(3).id]);
    expect(withNewTasks({ ids: [at(5).id, at(3).id], nextCursor: null }, [at(1)], byId(all)).ids).toEqual([at(5).id, at(3).id, at(1).id]);
  });

  it('adds nothing twice and returns the same list when nothing changes', () => {
    const all = [at(5)];
    const list = { ids: [at(5).id], nextCursor: null };
    expect(withNewTasks(list, [at(5)], byId(all))).toBe(list);
  });

  it('adds a task once when it comes twice in one batch (submitted, and moved when it ended before the batch went)', () => {
    const all = [at(5), at(6)];
    expect(withNewTasks({ ids: [at(5).id], nextCursor: null }, [at(6), at(6)], byId(all)).ids).toEqual([at(6).id, at(5).id]);
  });
});
