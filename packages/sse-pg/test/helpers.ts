import { randomUUID } from 'node:crypto';
import type { TaskEvent } from '../src/index.ts';
export { collectEventStream as sseReader } from '../src/index.ts';

export const counts = (settled: number, total: number, status: 'running' | 'completed' = 'running', round = 1) => ({
  status,
  stopReason: null,
  total,
  succeeded: settled,
  failed: 0,
  cancelled: 0,
  round,
  dispatched: true,
});

export function progress(taskId: string, settled: number, total: number): TaskEvent {
  return { type: 'task.progress', taskId, tenant: 't1', at: Date.now(), counts: counts(settled, total) };
}

export function completed(taskId: string, total: number): TaskEvent {
  return { type: 'task.completed', taskId, tenant: 't1', at: Date.now(), counts: counts(total, total, 'completed') };
}

export function log(taskId: string, message: string): TaskEvent {
  return { type: 'item.log', taskId, tenant: 't1', at: Date.now(), itemId: randomUUID(), key: 'k', message };
}
