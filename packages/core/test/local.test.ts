import { describe, expect, it } from 'vitest';
import { FanoutEvents, LocalLimit } from '../src/index.ts';
import { Attempt } from '../src/runtime/attempt.ts';
import { claimedAhead } from '../src/runtime/child-runner.ts';
import type { RuntimeContext } from '../src/runtime/context.ts';
import { PhaseCount } from '../src/runtime/phase-count.ts';

describe('LocalLimit', () => {
  it('takes a free slot without waiting, and only when one is free', () => {
    const limit = new LocalLimit(2);
    expect(limit.tryAcquire()).toBe(true);
    expect(limit.tryAcquire()).toBe(true);
    expect(limit.tryAcquire()).toBe(false);
    expect(limit.active).toBe(2);
    limit.release();
    expect(limit.tryAcquire()).toBe(true);
  });

  it('never runs more than its limit at once, and serves waiters in order', async () => {
    const limit = new LocalLimit(2);
    let active = 0;
    let peak = 0;
    const order: number[] = [];
    const gates = Array.from({ length: 6 }, () => Promise.withResolvers<void>());
    const runs = gates.map((gate, i) =>
      limit.run(async () => {
        active++;
        peak = Math.max(peak, active);
        order.push(i);
        await gate.promise;
        active--;
      }),
    );
    for (const gate of gates) {
      await new Promise((r) => setImmediate(r));
      gate.resolve();
    }
    await Promise.all(runs);
    expect(peak).toBe(2);
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
    expect(limit.active).toBe(0);
  });

  it('serves the waiters of different lanes in turn, each lane in order, and lets one give up', async () => {
    const limit = new LocalLimit(1);
    await limit.acquire();
    const order: string[] = [];
    const wait = (lane: string, name: string, signal?: AbortSignal) =>
      limit.acquire(signal, lane).then(
        () => {
          order.push(name);
          limit.release();
        },
        () => order.push(`${name} gave up`),
      );
    // A large task's items wait first; a small task's two come after them.
    const gone = new AbortController();
    const waits = [wait('big', 'b1'), wait('big', 'b2'), wait('big', 'b3', gone.signal), wait('big', 'b4'), wait('small', 's1'), wait('small', 's2')];
    expect(limit.waiting).toBe(6);
    gone.abort();
    limit.release();
    await Promise.all(waits);
    expect(order).toEqual(['b3 gave up', 'b1', 's1', 'b2', 's2', 'b4']);
    expect(limit.waiting).toBe(0);
    expect(limit.active).toBe(0);
  });

  it('lets a waiter give up when its signal aborts', async () => {
    const limit = new LocalLimit(1);
    await limit.acquire();
    const controller = new AbortController();
    const waiting = limit.acquire(controller.signal);
    controller.abort(new Error('cancelled'));
    await expect(waiting).rejects.toThrow('cancelled');
    expect(limit.waiting).toBe(0);
    limit.release();
    expect(limit.active).toBe(0);
  });

  it('takes some slots at once, and tells when enough of them are free again', async () => {
    const limit = new LocalLimit(4);
    expect(await limit.acquireSome(3)).toBe(3);
    expect(await limit.acquireSome(3)).toBe(1); // only one was free
    let resolved = false;
    const twoFree = limit.whenFree(2).then(() => (resolved = true));
    limit.release();
    await new Promise((r) => setImmediate(r));
    expect(resolved).toBe(false); // one free
    limit.release();
    await twoFree;
    expect(limit.active).toBe(2); // nothing taken by the waiter
    const allFree = limit.whenFree(99); // more than the limit: all of them
    limit.release();
    limit.release();
    await allFree;
    await limit.acquireSome(4);
    const controller = new AbortController();
    const all = limit.whenFree(4, controller.signal);
    controller.abort(new Error('stopping'));
    await expect(all).rejects.toThrow('stopping');
  });

  it('resizes: a larger limit serves the waiters at once, a smaller one lets the holders keep their slots', async () => {
    const limit = new LocalLimit(2);
    await limit.acquireSome(2);
    const order: string[] = [];
    const a = limit.acquire().then(() => void order.push('a'));
    const b = limit.acquire().then(() => void order.push('b'));
    limit.resize(3);
    await a;
    expect(order).toEqual(['a']);
    expect(limit.active).toBe(3);
    limit.resize(1); // three held, one allowed: releases do not pass the slot on until under it
    limit.release();
    limit.release();
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual(['a']);
    expect(limit.active).toBe(1);
    limit.release();
    await b;
    expect(order).toEqual(['a', 'b']);
    expect(limit.active).toBe(1);
    expect(() => limit.resize(0)).toThrow('limit: must be an integer >= 1');
  });

  it('takes together the slots of holders that end in the same turn of the event loop', async () => {
    const limit = new LocalLimit(5);
    expect(await limit.acquireSome(5)).toBe(5);
    // Five handlers ending in the same turn, each in a callback of its own (immediates queued
    // together run in one turn; one queued meanwhile waits for the next).
    for (let i = 0; i < 5; i++) setImmediate(() => limit.release());
    // Woken by the first release, the waiter takes the four freed in the same turn as well.
    expect(await limit.acquireSome(5)).toBe(5);
    expect(limit.active).toBe(5);
  });
});

describe('FanoutEvents', () => {
  it('a throwing or rejecting listener never stops the others nor the emitter', async () => {
    const errors: unknown[] = [];
    const events = new FanoutEvents((error) => errors.push(error));
    const seen: string[] = [];
    events.on('task.completed', () => {
      throw new Error('sync boom');
    });
    events.on('task.completed', async () => {
      throw new Error('async boom');
    });
    events.on('task.completed', (e) => {
      seen.push(e.id);
    });
    const event = { id: 't1', kind: 'k', tenant: null, status: 'completed' as const, stopReason: null, total: 1, succeeded: 1, failed: 0, cancelled: 0, round: 1, dispatched: true, at: 0 };
    expect(() => events.emit('task.completed', event)).not.toThrow();
    await new Promise((r) => setImmediate(r));
    expect(seen).toEqual(['t1']);
    expect(errors.map((e) => (e as Error).message).sort()).toEqual(['async boom', 'sync boom']);
  });

  it('reports listener errors on the error event when someone listens', () => {
    const events = new FanoutEvents(() => {
      throw new Error('should not be called');
    });
    const reported: string[] = [];
    events.on('error', (e) => {
      reported.push(e.context);
    });
    const off = events.on('item.log', () => {
      throw new Error('x');
    });
    events.emit('item.log', { taskId: 't', itemId: 'i', key: 'k', kind: 'k', tenant: null, attempt: 1, message: 'm' });
    expect(reported).toEqual(['listener of item.log']);
    off();
    expect(events.listenerCount('item.log')).toBe(0);
  });
});

describe('claimedAhead', () => {
  it('holds about 25 ms of work ahead of the handlers: all of them for short items, one for long ones', () => {
    expect(claimedAhead(50, null)).toBe(13); // before any item ended: a quarter
    expect(claimedAhead(50, 0.05)).toBe(50); // no-op items: as many as the handlers
    expect(claimedAhead(50, 20)).toBe(50);
    expect(claimedAhead(50, 100)).toBe(13);
    expect(claimedAhead(50, 10_000)).toBe(1); // an LLM call: one
    expect(claimedAhead(1, 5)).toBe(1);
  });
});

describe('PhaseCount', () => {
  it('resolves each waiter once the count is at its level or below, and at once when it already is', async () => {
    const count = new PhaseCount();
    await count.atMost(0);
    for (let i = 0; i < 3; i++) count.up();
    const reached: number[] = [];
    const waits = [0, 1, 2].map((level) => count.atMost(level).then(() => reached.push(level)));
    const settle = () => new Promise((r) => setImmediate(r));
    await settle();
    expect(reached).toEqual([]);
    count.down();
    await settle();
    expect(reached).toEqual([2]);
    count.down();
    count.down();
    await Promise.all(waits);
    expect(reached).toEqual([2, 1, 0]);
    expect(count.value).toBe(0);
  });
});

describe('Attempt', () => {
  const claimed = { itemId: 'i1', taskId: 't1', kind: 'k', tenant: 'acme', key: 'a', snapshot: {}, attempt: 2, maxAttempts: 3, round: 1, deadlineAt: null };
  const ctx = { limits: {}, logger: { debug() {}, info() {}, warn() {}, error() {} } } as unknown as RuntimeContext;

  it('gives the handler its item, task and signal, and a stop before or after the signal is read aborts it', () => {
    const early = new Attempt(ctx, claimed, 'tok');
    expect(early.item).toEqual({ id: 'i1', key: 'a', taskId: 't1', attempt: 2, maxAttempts: 3, round: 1 });
    expect(early.task).toEqual({ id: 't1', tenant: 'acme' });
    early.abort('task_stopped');
    early.abort('shutdown'); // the first reason counts
    expect(early.why).toBe('task_stopped');
    expect(early.signal.aborted).toBe(true);
    expect(() => early.throwIfStopped()).toThrow('item i1 aborted: task_stopped');

    const late = new Attempt(ctx, claimed, 'tok');
    const { signal } = late;
    expect(signal.aborted).toBe(false);
    expect(() => late.throwIfStopped()).not.toThrow();
    late.abort('expired');
    expect(signal.aborted).toBe(true);
    expect((signal.reason as Error).message).toBe('item i1 aborted: expired');
  });
});
