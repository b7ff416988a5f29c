import { randomUUID } from 'node:crypto';
import type { TaskEvent } from '../src/index.ts';

export interface SseMessage {
  event: string;
  id: string | undefined;
  data: any;
}

/** Parses a text/event-stream body as it arrives; comment lines (heartbeats) are counted apart. */
export function sseReader(body: ReadableStream<Uint8Array>) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const messages: SseMessage[] = [];
  let comments = 0;
  let buffer = '';
  let ended = false;
  const pump = (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          let event = 'message';
          let id: string | undefined;
          const data: string[] = [];
          let comment = false;
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comment = true;
            else if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('id: ')) id = line.slice(4);
            else if (line.startsWith('data: ')) data.push(line.slice(6));
          }
          if (comment && data.length === 0) comments++;
          else messages.push({ event, id, data: JSON.parse(data.join('\n')) });
        }
      }
    } catch {
      // cancelled
    } finally {
      ended = true;
    }
  })();
  return {
    messages,
    get comments() {
      return comments;
    },
    get ended() {
      return ended;
    },
    async cancel() {
      await reader.cancel().catch(() => {});
      await pump;
    },
  };
}

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
