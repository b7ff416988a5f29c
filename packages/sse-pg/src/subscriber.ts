import { maskedLogger, type Logger } from '@fanout/core';
import pg from 'pg';
import { assertChannel, taskEventSchema, wireSchema, type TaskEvent } from './events.ts';

export interface ListenerOptions {
  connectionString: string;
  /** @default 'fanout_events' */
  channel?: string;
  /** The connection's application_name, to find it in pg_stat_activity. @default 'fanout-listener' */
  applicationName?: string;
  /** First reconnect delay; doubled per failed try, with jitter. @default 100 */
  minBackoffMs?: number;
  /** @default 5000 */
  maxBackoffMs?: number;
  /** How often the connection is checked with a query; a dead one is replaced. @default 10000 */
  livenessMs?: number;
  /** A liveness query slower than this counts as a dead connection. @default 5000 */
  livenessTimeoutMs?: number;
  logger?: Logger;
}

export type TaskEventListener = (event: TaskEvent) => void;

/**
 * Receives task events on a dedicated, non-pooled connection (LISTEN on a pooled client silently
 * stops when the client goes back to the pool). The connection is checked every `livenessMs`
 * and replaced, with capped exponential backoff and jitter, whenever it fails. Notifications sent
 * while it was down are gone, so after every reconnect `onReconnect` listeners are told to
 * re-read what they show (the SSE handler re-reads the task's state). A notification that does
 * not parse (another writer on the channel) is logged and skipped.
 */
export class TaskEventSubscriber implements AsyncDisposable {
  readonly channel: string;
  readonly #options: Required<Omit<ListenerOptions, 'logger'>>;
  readonly #logger: Logger | undefined;
  readonly #byTask = new Map<string, Set<TaskEventListener>>();
  readonly #byTenant = new Map<string | null, Set<TaskEventListener>>();
  readonly #onReconnect = new Set<() => void>();
  #client: pg.Client | null = null;
  #connecting: Promise<void> | null = null;
  #liveness: NodeJS.Timeout | null = null;
  #closed = false;
  #connects = 0;
  #connectedAt = 0;
  #failures = 0;
  #receiving: Promise<void> = Promise.resolve();
  #ready!: Promise<void>;

  constructor(options: ListenerOptions) {
    this.channel = assertChannel(options.channel ?? 'fanout_events');
    this.#options = {
      connectionString: options.connectionString,
      channel: this.channel,
      applicationName: options.applicationName ?? 'fanout-listener',
      minBackoffMs: options.minBackoffMs ?? 100,
      maxBackoffMs: options.maxBackoffMs ?? 5000,
      livenessMs: options.livenessMs ?? 10_000,
      livenessTimeoutMs: options.livenessTimeoutMs ?? 5000,
    };
    this.#logger = options.logger && maskedLogger(options.logger);
  }

  /** Connects and listens; resolves once the first LISTEN is in place. */
  start(): Promise<void> {
    this.#ready ??= this.#connect();
    return this.#ready;
  }

  /** How many times a connection was established (1 + reconnects). */
  get connects(): number {
    return this.#connects;
  }

  /** The backend process id of the listening connection, when connected. */
  get backendPid(): number | null {
    return (this.#client as unknown as { processID?: number } | null)?.processID ?? null;
  }

  /** Subscriptions across all tasks (for leak checks). */
  get listenerCount(): number {
    let n = 0;
    for (const set of this.#byTask.values()) n += set.size;
    for (const set of this.#byTenant.values()) n += set.size;
    return n + this.#onReconnect.size;
  }

  subscribe(taskId: string, listener: TaskEventListener): () => void {
    let set = this.#byTask.get(taskId);
    if (!set) this.#byTask.set(taskId, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.#byTask.get(taskId) === set) this.#byTask.delete(taskId);
    };
  }

  /** Every event of one tenant's tasks (whose stored payloads, only item logs, are not read for it). */
  subscribeTenant(tenant: string | null, listener: TaskEventListener): () => void {
    let set = this.#byTenant.get(tenant);
    if (!set) this.#byTenant.set(tenant, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.#byTenant.get(tenant) === set) this.#byTenant.delete(tenant);
    };
  }

  onReconnect(listener: () => void): () => void {
    this.#onReconnect.add(listener);
    return () => this.#onReconnect.delete(listener);
  }

  async #connect(): Promise<void> {
    // A connection that dropped soon after it was made keeps the backoff growing, so a proxy
    // that kills every connection at once does not get a tight reconnect loop.
    const unstable = Date.now() - this.#connectedAt < 30_000;
    this.#failures = unstable ? this.#failures + 1 : 0;
    if (this.#failures > 0) await this.#pause(this.#failures - 1);
    for (let attempt = this.#failures; !this.#closed; attempt++) {
      const client = new pg.Client({ connectionString: this.#options.connectionString, application_name: this.#options.applicationName });
      try {
        await client.connect();
        client.on('notification', (message) => {
          // One at a time, in arrival order: an event whose payload is read from its table is
          // dispatched before the events that came after it.
          if (message.channel === this.channel) this.#receiving = this.#receiving.then(() => this.#receive(client, message.payload ?? '')).catch((error: unknown) => this.#logger?.error('task event subscriber failed', { error: (error as Error).message }));
        });
        client.on('error', (error) => this.#lost(client, error));
        client.on('end', () => this.#lost(client, new Error('connection ended')));
        await client.query(`LISTEN ${this.channel}`); // a validated identifier; LISTEN takes no parameters
        if (this.#closed) {
          await client.end().catch(() => {});
          return;
        }
        this.#client = client;
        this.#connects++;
        this.#connectedAt = Date.now();
        this.#startLiveness(client);
        if (this.#connects > 1) {
          this.#logger?.info('task event listener reconnected', { channel: this.channel });
          for (const listener of [...this.#onReconnect]) this.#safe(() => listener());
        }
        return;
      } catch (error) {
        client.removeAllListeners();
        client.on('error', () => {}); // a late socket error must not crash the process
        await client.end().catch(() => {});
        this.#logger?.warn('task event listener cannot connect; retrying', { error: (error as Error).message });
        await this.#pause(attempt);
      }
    }
  }

  /** Capped exponential backoff with jitter. */
  #pause(attempt: number): Promise<void> {
    const base = Math.min(this.#options.maxBackoffMs, this.#options.minBackoffMs * 2 ** Math.min(attempt, 16));
    const wait = base / 2 + Math.random() * (base / 2);
    return new Promise((resolve) => setTimeout(resolve, wait).unref());
  }

  #startLiveness(client: pg.Client): void {
    if (this.#liveness) clearInterval(this.#liveness);
    this.#liveness = setInterval(() => {
      const timeout = new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error('liveness check timed out')), this.#options.livenessTimeoutMs).unref(),
      );
      Promise.race([client.query('SELECT 1'), timeout]).catch((error: Error) => this.#lost(client, error));
    }, this.#options.livenessMs);
    this.#liveness.unref();
  }

  #lost(client: pg.Client, error: Error): void {
    if (this.#closed || this.#client !== client) return;
    this.#logger?.warn('task event listener lost its connection; reconnecting', { error: error.message });
    this.#client = null;
    if (this.#liveness) clearInterval(this.#liveness);
    this.#liveness = null;
    client.removeAllListeners();
    client.on('error', () => {}); // a dying client may still emit
    void client.end().catch(() => {});
    this.#connecting ??= this.#connect().finally(() => {
      this.#connecting = null;
    });
  }

  /** Reconnects now (tests, or after a known network change). */
  async reconnect(): Promise<void> {
    if (this.#client) this.#lost(this.#client, new Error('reconnect requested'));
    await this.#connecting;
  }

  async #receive(client: pg.Client, payload: string): Promise<void> {
    let json: unknown;
    try {
      json = JSON.parse(payload);
    } catch {
      this.#logger?.warn('skipping a notification that is not JSON', { channel: this.channel, payload: payload.slice(0, 200) });
      return;
    }
    const wire = wireSchema.safeParse(json);
    if (!wire.success) {
      this.#logger?.warn('skipping a notification that is not a task event', { channel: this.channel, error: wire.error.message });
      return;
    }
    let event: TaskEvent;
    if ('event' in wire.data) {
      event = wire.data.event;
    } else {
      // Only read the stored payload when someone here watches the task.
      if (!this.#byTask.has(wire.data.taskId)) return;
      try {
        const { rows } = await client.query<{ payload: unknown }>('SELECT payload FROM fanout_event_payload WHERE id = $1', [wire.data.ref]);
        const parsed = taskEventSchema.safeParse(rows[0]?.payload);
        if (!parsed.success) {
          this.#logger?.warn('skipping a stored task event that is missing or malformed', { ref: wire.data.ref });
          return;
        }
        event = parsed.data;
      } catch (error) {
        this.#logger?.warn('could not read a stored task event', { ref: wire.data.ref, error: (error as Error).message });
        return;
      }
    }
    for (const listeners of [this.#byTask.get(event.taskId), this.#byTenant.get(event.tenant)]) {
      if (listeners) for (const listener of [...listeners]) this.#safe(() => listener(event));
    }
  }

  #safe(fn: () => void): void {
    try {
      fn();
    } catch (error) {
      this.#logger?.error('task event subscriber failed', { error: (error as Error).message });
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#liveness) clearInterval(this.#liveness);
    const client = this.#client;
    this.#client = null;
    if (client) {
      client.removeAllListeners();
      client.on('error', () => {});
      await client.end().catch(() => {});
    }
    await this.#connecting?.catch(() => {});
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

