import { availableParallelism } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker, type ResourceLimits, type Transferable } from 'node:worker_threads';

// From the sources (tests, the dev-source condition) or from the build.
const THREAD_ENTRY = new URL(import.meta.url.endsWith('.ts') ? './pool-worker.ts' : './workers/pool-worker.js', import.meta.url);

export interface WorkerPoolOptions {
  /**
   * The module each thread loads (`new URL('./parse.ts', import.meta.url)`): its default export
   * is called with a job's input and returns (or resolves to) its output. Inputs and outputs
   * cross threads by structured clone; keep the module's imports to what the job needs.
   */
  module: string | URL;
  /** Threads at most; jobs beyond wait their turn. @default min(available cores, 4) */
  size?: number;
  /** A job running longer is stopped (its thread terminated). @default 60000 */
  timeoutMs?: number;
  /** Each thread's memory limits; one that exceeds them is terminated, not the process. @default { maxOldGenerationSizeMb: 512 } */
  resourceLimits?: ResourceLimits;
}

/** Why a job did not return a value. */
export type WorkerJobFailure = 'timeout' | 'out_of_memory' | 'crashed' | 'aborted' | 'failed';

/** A job that did not finish: the module threw (`failed`, with its error's name and message), or the pool stopped it. */
export class WorkerJobError extends Error {
  readonly reason: WorkerJobFailure;
  /** For `failed`: the code of the module's error, when it had one. */
  readonly code: string | undefined;

  constructor(reason: WorkerJobFailure, message: string, options: { name?: string; code?: string } = {}) {
    super(message);
    this.name = options.name ?? 'WorkerJobError';
    this.reason = reason;
    this.code = options.code;
  }
}

interface Job {
  input: unknown;
  transfer: Transferable[];
  signal: AbortSignal | undefined;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

interface Thread {
  worker: Worker;
  /** The job module is loaded: a job's time runs from then. */
  ready: boolean;
  job: (Job & { id: number; timer: NodeJS.Timeout | null; onAbort: () => void }) | null;
}

/**
 * A pool of worker threads for CPU-heavy or untrusted work (parsing a PDF a user uploaded): the
 * event loop stays free (leases are renewed, heartbeats sent), each job has a time limit and
 * each thread memory limits, and a job that breaks them, or whose signal aborts, has its thread
 * terminated and replaced: the job fails alone, the process and the other jobs go on.
 */
export class WorkerPool {
  readonly size: number;
  readonly timeoutMs: number;
  readonly #module: string;
  readonly #limits: ResourceLimits;
  readonly #threads = new Set<Thread>();
  readonly #queue: Job[] = [];
  #nextId = 1;
  #closed = false;

  constructor(options: WorkerPoolOptions) {
    this.#module = options.module instanceof URL ? options.module.href : options.module.startsWith('file:') ? options.module : pathToFileURL(options.module).href;
    this.size = Math.max(1, options.size ?? Math.min(availableParallelism(), 4));
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.#limits = options.resourceLimits ?? { maxOldGenerationSizeMb: 512 };
  }

  /** Runs one job on a thread; `transfer` moves buffers instead of copying them. */
  run<O = unknown>(input: unknown, options: { signal?: AbortSignal; transfer?: Transferable[] } = {}): Promise<O> {
    if (this.#closed) return Promise.reject(new WorkerJobError('aborted', 'the worker pool is closed'));
    if (options.signal?.aborted) return Promise.reject(new WorkerJobError('aborted', 'the job was aborted before it started'));
    return new Promise<O>((resolve, reject) => {
      const job: Job = { input, transfer: options.transfer ?? [], signal: options.signal, resolve: resolve as (v: unknown) => void, reject };
      // Aborted while it waits: it leaves the queue.
      options.signal?.addEventListener(
        'abort',
        () => {
          const at = this.#queue.indexOf(job);
          if (at >= 0) {
            this.#queue.splice(at, 1);
            reject(new WorkerJobError('aborted', 'the job was aborted before it started'));
          }
        },
        { once: true },
      );
      this.#queue.push(job);
      this.#dispatch();
    });
  }

  /** Jobs waiting for a thread. */
  get waiting(): number {
    return this.#queue.length;
  }

  /** Stops every thread; running and waiting jobs fail as aborted. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const job of this.#queue.splice(0)) job.reject(new WorkerJobError('aborted', 'the worker pool is closed'));
    await Promise.all([...this.#threads].map((thread) => this.#stop(thread, new WorkerJobError('aborted', 'the worker pool is closed'))));
  }

  #dispatch(): void {
    while (!this.#closed && this.#queue.length > 0) {
      let thread = [...this.#threads].find((t) => t.job === null);
      if (!thread && this.#threads.size < this.size) thread = this.#spawn();
      if (!thread) return;
      this.#start(thread, this.#queue.shift()!);
    }
  }

  #spawn(): Thread {
    const worker = new Worker(fileURLToPath(THREAD_ENTRY), { workerData: { module: this.#module }, resourceLimits: this.#limits, stdout: false, stderr: false });
    const thread: Thread = { worker, ready: false, job: null };
    this.#threads.add(thread);
    worker.on('message', (message: { ready?: true; id: number; ok: boolean; value?: unknown; error?: { name: string; message: string; code?: string } }) => {
      if (message.ready) {
        thread.ready = true;
        if (thread.job) thread.job.timer = this.#timer(thread);
        return;
      }
      const job = thread.job;
      if (!job || job.id !== message.id) return;
      this.#finish(thread);
      if (message.ok) job.resolve(message.value);
      else job.reject(new WorkerJobError('failed', message.error!.message, { name: message.error!.name, ...(message.error!.code ? { code: message.error!.code } : {}) }));
    });
    worker.on('error', (error: Error & { code?: string }) => {
      const outOfMemory = error.code === 'ERR_WORKER_OUT_OF_MEMORY';
      void this.#stop(thread, new WorkerJobError(outOfMemory ? 'out_of_memory' : 'crashed', outOfMemory ? `the job ran out of memory (${this.#limits.maxOldGenerationSizeMb ?? '?'} MB)` : `the job's thread failed: ${error.message}`));
    });
    worker.on('exit', () => {
      void this.#stop(thread, new WorkerJobError('crashed', "the job's thread exited"));
    });
    worker.unref();
    return thread;
  }

  #timer(thread: Thread): NodeJS.Timeout {
    return setTimeout(() => void this.#stop(thread, new WorkerJobError('timeout', `the job took longer than ${this.timeoutMs} ms`)), this.timeoutMs);
  }

  #start(thread: Thread, job: Job): void {
    const id = this.#nextId++;
    const onAbort = () => void this.#stop(thread, new WorkerJobError('aborted', 'the job was aborted'));
    thread.job = { ...job, id, timer: null, onAbort };
    if (thread.ready) thread.job.timer = this.#timer(thread);
    job.signal?.addEventListener('abort', onAbort, { once: true });
    // A busy thread keeps the process alive; an idle one does not.
    thread.worker.ref();
    try {
      thread.worker.postMessage({ id, input: job.input }, job.transfer);
    } catch (error) {
      this.#finish(thread);
      job.reject(error);
      this.#dispatch();
    }
  }

  #finish(thread: Thread): void {
    const job = thread.job;
    if (!job) return;
    if (job.timer) clearTimeout(job.timer);
    job.signal?.removeEventListener('abort', job.onAbort);
    thread.job = null;
    thread.worker.unref();
    queueMicrotask(() => this.#dispatch());
  }

  /** Terminates a thread (a stuck or broken job cannot be interrupted otherwise); its job fails with `error`. */
  async #stop(thread: Thread, error: WorkerJobError): Promise<void> {
    if (!this.#threads.delete(thread)) return;
    const job = thread.job;
    this.#finish(thread);
    job?.reject(error);
    await thread.worker.terminate().catch(() => {});
  }
}
