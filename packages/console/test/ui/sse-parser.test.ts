import { describe, expect, it } from 'vitest';
import { reconnectDelay } from '../../src/ui/stream/backoff.ts';
import { SseParser } from '../../src/ui/stream/sse-parser.ts';

describe('SseParser', () => {
  it('reads events with their type, data and id', () => {
    const p = new SseParser();
    expect(p.push('event: task.progress\nid: 7\ndata: {"a":1}\n\n')).toEqual([{ event: 'task.progress', data: '{"a":1}', id: '7' }]);
    expect(p.lastEventId).toBe('7');
  });

  it('joins chunks cut anywhere, including inside a CRLF', () => {
    const p = new SseParser();
    const text = 'event: x\r\ndata: one\r\n\r\nevent: y\r\ndata: two\r\n\r\n';
    const out = [];
    for (const ch of text) out.push(...p.push(ch));
    expect(out).toEqual([
      { event: 'x', data: 'one', id: undefined },
      { event: 'y', data: 'two', id: undefined },
    ]);
  });

  it('skips heartbeats and joins multi-line data', () => {
    const p = new SseParser();
    expect(p.push(': ping\n\n')).toEqual([]);
    expect(p.push('data: a\ndata: b\n\n')).toEqual([{ event: 'message', data: 'a\nb', id: undefined }]);
  });

  it('keeps the last id across events and from a block without data', () => {
    const p = new SseParser();
    p.push('id: 5\ndata: x\n\n');
    p.push('id: 6\n\n');
    expect(p.lastEventId).toBe('6');
    expect(p.push('data: y\n\n')).toEqual([{ event: 'message', data: 'y', id: undefined }]);
    expect(p.lastEventId).toBe('6');
  });

  it('holds an unfinished event until its blank line', () => {
    const p = new SseParser();
    expect(p.push('event: a\ndata: {"x"')).toEqual([]);
    expect(p.push(':1}\n')).toEqual([]);
    expect(p.push('\n')).toEqual([{ event: 'a', data: '{"x":1}', id: undefined }]);
  });
});

describe('reconnectDelay', () => {
  it('backs off 1, 2, 4, 8 then 15 s', () => {
    expect([0, 1, 2, 3, 4, 5, 10].map(reconnectDelay)).toEqual([1000, 2000, 4000, 8000, 15_000, 15_000, 15_000]);
  });
});
