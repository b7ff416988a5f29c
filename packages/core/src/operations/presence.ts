import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { FanoutStore } from '../store/types.ts';
import type { Logger } from '../runtime/logger.ts';
import { errorFields } from '../runtime/logger.ts';
import type { RuntimeStats } from './runtime-stats.ts';

export interface PresenceOptions {
  role: string;
  kinds: readonly string[];
  concurrency: number;
  /** @default 5000 */
  intervalMs: number;
  logger: Logger;
}

/**
 * Reports this process to the store every few seconds (who it is, what it runs, its counters and
 * the items it settled per bucket), so operators see live and lost workers and throughput over
 * time. A failed report is logged and its samples kept for the next one; stopping removes the
 * process from the list after a last report.
 */
export class Presence {
  readonly id = randomUUID();
  readonly #store: FanoutStore;
  readonly #stats: RuntimeStats;
  readonly #options: PresenceOptions;
  #timer: NodeJS.Timeout | null = null;
  #reporting: Promise<void> | null = null;

  constructor(store: FanoutStore, stats: RuntimeStats, options: PresenceOptions) {
    this.#store = store;
    this.#stats = stats;
    this.#options = options;
  }

  start(): void {
    void this.report();
    this.#timer = setInterval(() => void this.report(), this.#options.intervalMs);
    this.#timer.unref();
  }

  /** One report now (concurrent calls share it). */
  report(): Promise<void> {
    this.#reporting ??= this.#report().finally(() => {
      this.#reporting = null;
    });
    return this.#reporting;
  }

  async #report(): Promise<void> {
    const samples = this.#stats.drainSamples();
    try {
      await this.#store.reportPresence(
        {
          id: this.id,
          role: this.#options.role,
          host: hostname(),
          pid: process.pid,
          kinds: this.#options.kinds,
          concurrency: this.#options.concurrency,
          inFlight: this.#stats.inFlight,
          startedAt: this.#stats.startedAt,
          stats: this.#stats.snapshot(),
        },
        samples,
      );
    } catch (error) {
      this.#stats.restoreSamples(samples);
      this.#options.logger.warn('could not report this process to the store', errorFields(error));
    }
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#reporting;
    await this.#report();
    await this.#store.removeWorker(this.id).catch((error: unknown) => this.#options.logger.warn('could not remove this process from the store', errorFields(error)));
  }
}
