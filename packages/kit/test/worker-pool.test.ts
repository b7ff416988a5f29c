import { loopLagDuring } from '@fanout/testdb';
import { describe, expect, it } from 'vitest';
import { WorkerJobError, WorkerPool } from '../src/index.ts';

const job = new URL('./fixtures/pool-job.ts', import.meta.url);


describe('worker pool', () => {
  it('runs jobs on threads and answers their values; the module’s errors come back with their name and code', async () => {
    const pool = new WorkerPool({ module: job, size: 2 });
    try {
      const answers = await Promise.all([1, 2, 3, 4].map((value) => pool.run<{ value: number; thread: number }>({ kind: 'echo', value })));
      expect(answers.map((a) => a.value)).toEqual([1, 2, 3, 4]);
      expect(new Set(answers.map((a) => a.thread)).size).toBeLessThanOrEqual(2);
      await expect(pool.run({ kind: 'throw' })).rejects.toMatchObject({ reason: 'failed', name: 'BrokenInput', code: 'broken', message: 'the input is broken' });
    } finally {
      await pool.close();
    }
  });

  it('stops a job past its time limit without blocking the event loop, and its neighbours go on', async () => {
    const pool = new WorkerPool({ module: job, size: 2, timeoutMs: 500 });
    try {
      const stuck = pool.run({ kind: 'spin', ms: 60_000 });
      const neighbour = pool.run<{ value: string }>({ kind: 'echo', value: 'fine' });
      const started = Date.now();
      const { result, maxLagMs } = await loopLagDuring(stuck);
      expect(result.status).toBe('rejected');
      expect((result as PromiseRejectedResult).reason).toMatchObject({ reason: 'timeout', message: 'the job took longer than 500 ms' });
      expect(Date.now() - started).toBeLessThan(5000);
      // The job would block the loop for its whole 60 s; a busy machine adds some lag of its own.
      expect(maxLagMs).toBeLessThan(1000);
      expect((await neighbour).value).toBe('fine');
      // The pool replaced the thread: it keeps working.
      expect((await pool.run<{ value: string }>({ kind: 'echo', value: 'after' })).value).toBe('after');
    } finally {
      await pool.close();
    }
  });

  it('stops a job that exceeds its memory limit: the job fails, the process lives', async () => {
    const pool = new WorkerPool({ module: job, size: 1, timeoutMs: 60_000, resourceLimits: { maxOldGenerationSizeMb: 64 } });
    try {
      await expect(pool.run({ kind: 'allocate' })).rejects.toMatchObject({ reason: 'out_of_memory' });
      expect((await pool.run<{ value: number }>({ kind: 'echo', value: 7 })).value).toBe(7);
    } finally {
      await pool.close();
    }
  });

  it('aborts a running job and a waiting one when their signal aborts', async () => {
    const pool = new WorkerPool({ module: job, size: 1 });
    try {
      const running = new AbortController();
      const waiting = new AbortController();
      const first = pool.run({ kind: 'spin', ms: 60_000 }, { signal: running.signal });
      const second = pool.run({ kind: 'echo', value: 1 }, { signal: waiting.signal });
      expect(pool.waiting).toBe(1);
      waiting.abort();
      await expect(second).rejects.toBeInstanceOf(WorkerJobError);
      running.abort();
      await expect(first).rejects.toMatchObject({ reason: 'aborted' });
      expect((await pool.run<{ value: number }>({ kind: 'echo', value: 2 })).value).toBe(2);
    } finally {
      await pool.close();
    }
    await expect(pool.run({ kind: 'echo' })).rejects.toMatchObject({ reason: 'aborted', message: 'the worker pool is closed' });
  });
});
