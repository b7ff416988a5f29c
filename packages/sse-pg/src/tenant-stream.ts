import type { Context } from 'hono';
import { streamSSE, type SSEStreamingApi } from 'hono/streaming';
import { isStateEvent, type TaskCounts, type TaskEvent, type TaskStateEvent } from './events.ts';
import { isNewerState } from './publisher.ts';
import type { TaskState } from './sse.ts';
import type { TaskEventSubscriber } from './subscriber.ts';
import { liveCounts } from './telemetry.ts';

/** A task's state with the definition it belongs to. */
export interface KindedTaskState extends TaskState {
  kind: string;
}

/** Whose tasks a stream carries: one tenant's, of some definitions (an app's). */
export interface StreamScope {
  tenant: string | null;
  kinds: readonly string[];
}

export interface TenantEventsOptions {
  subscriber: TaskEventSubscriber;
  scope: StreamScope;
  /**
   * The scope's tasks as they are now: every unfinished one (unless `unfinished` is false), and
   * those changed since `since` when given; newest first, at most `limit`.
   */
  loadStates(scope: StreamScope, since: Date | null, limit: number, options: { unfinished: boolean }): Promise<KindedTaskState[]>;
  /** A task of the scope whose item events (failures, logs) also flow; checked by the caller. */
  focus?: string | null;
  /** @default 15000 */
  heartbeatMs?: number;
  /** States of one task are sent at most this often (the newest wins). @default 250 */
  flushMs?: number;
  /** A resume re-sends what changed this long before the client's last event (clock margin). @default 5000 */
  resumeMarginMs?: number;
  /**
   * Past this many tasks to replay on a resume (or after the LISTEN connection was lost), the
   * client is told to reload instead (`resync`); a new stream and a heartbeat's read send the
   * newest this many. @default 500
   */
  maxReplay?: number;
}

const STATE_TYPE: Record<TaskCounts['status'], TaskStateEvent['type']> = {
  queued: 'task.progress',
  running: 'task.progress',
  stopping: 'task.progress',
  completed: 'task.completed',
  failed: 'task.failed',
  cancelled: 'task.cancelled',
};

function stateEvent(task: KindedTaskState): TaskStateEvent {
  const { id, tenant, kind, ...counts } = task;
  return { type: STATE_TYPE[task.status], taskId: id, tenant, kind, at: Date.now(), counts };
}

/** Tasks whose newest sent state is remembered, to send only news; the oldest are forgotten first. */
const MAX_REMEMBERED = 5000;
const MAX_QUEUED_ITEM_EVENTS = 1000;
/** How far ahead of this server's clock a resumed id may be (another server's clock). */
const MAX_CLOCK_SKEW_MS = 60_000;

/**
 * One Server-Sent Events stream of every task a tenant sees in an app: a page needs one
 * connection, not one per task (browsers allow six per host). It starts with the states of the
 * unfinished tasks (the newest `maxReplay`), or on a resume with `Last-Event-ID` of every task
 * changed since, then live states, coalesced per task and only ever moving forward, and the item
 * events of the focused task. Event ids are this server's clock in milliseconds, strictly
 * increasing. Each heartbeat, and a lost LISTEN connection, reads again what changed since the
 * last read; when a resume or a reconnect would have more than `maxReplay` to replay, the client
 * gets a `resync` event and reloads.
 */
export function streamTenantEvents(c: Context, options: TenantEventsOptions): Response {
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const flushMs = options.flushMs ?? 250;
  const margin = options.resumeMarginMs ?? 5000;
  const maxReplay = options.maxReplay ?? 500;
  const { scope } = options;
  const lastEventId = Number(c.req.header('last-event-id') ?? '');
  // Ids are a server's clock: one later than this server's clock allows (a minute of skew between
  // servers) was never sent, and is ignored (it would put every later read in the future).
  const resumeFrom = Number.isSafeInteger(lastEventId) && lastEventId > 0 && lastEventId <= Date.now() + MAX_CLOCK_SKEW_MS ? lastEventId : null;

  return streamSSE(c, async (stream) => {
    let lastId = resumeFrom ?? 0;
    const nextId = () => (lastId = Math.max(lastId + 1, Date.now()));
    const sent = new Map<string, TaskStateEvent>();
    const waiting = new Map<string, TaskStateEvent>();
    const itemEvents: TaskEvent[] = [];
    let resync = false;
    let dropped = 0;
    let wake: (() => void) | null = null;
    let closed = false;
    let lastFlush = 0;
    const inScope = (event: TaskEvent) => event.tenant === scope.tenant && event.kind !== undefined && scope.kinds.includes(event.kind);

    const offer = (event: TaskStateEvent) => {
      const newest = waiting.get(event.taskId) ?? sent.get(event.taskId);
      if (newest && !isNewerState(event, newest)) return;
      waiting.set(event.taskId, event);
      wake?.();
    };
    const receiveState = (event: TaskEvent) => {
      if (inScope(event) && isStateEvent(event)) offer(event);
    };
    const receiveItem = (event: TaskEvent) => {
      if (inScope(event) && !isStateEvent(event)) {
        if (itemEvents.length >= MAX_QUEUED_ITEM_EVENTS) {
          itemEvents.shift();
          dropped++;
        }
        itemEvents.push(event);
        wake?.();
      }
    };
    // When the last read that went through began (this server's clock): the next re-read covers
    // everything changed since, whatever was sent in between.
    let readFrom = resumeFrom ?? Date.now();
    /**
     * Reads the states and offers them. A `replay` (a resume, a read after the LISTEN connection
     * was lost) must carry everything it covers: past `maxReplay` tasks the client is told to
     * reload instead. A new stream's first read and a heartbeat's send the newest `maxReplay`: the
     * page read its tasks itself, and a heartbeat's read only catches a notification that never
     * came. (A heartbeat that read every unfinished task told a tenant with more than `maxReplay` of
     * them to reload every heartbeat, and a new stream at once.)
     */
    const load = async (since: Date | null, how: { unfinished: boolean; replay: boolean }) => {
      const began = Date.now();
      const states = await options.loadStates(scope, since, maxReplay + 1, { unfinished: how.unfinished });
      readFrom = began;
      if (states.length > maxReplay && how.replay) {
        resync = true;
        wake?.();
        return;
      }
      for (const state of states.slice(0, maxReplay)) offer(stateEvent(state));
      wake?.();
    };

    // Subscribe before reading, so nothing between the read and the subscription is lost.
    const offTenant = options.subscriber.subscribeTenant(scope.tenant, receiveState);
    const offFocus = options.focus ? options.subscriber.subscribe(options.focus, receiveItem) : () => {};
    const offReconnect = options.subscriber.onReconnect(() => {
      void load(new Date(readFrom - margin), { unfinished: false, replay: true }).catch(() => {});
    });
    // With each heartbeat the states changed since the last read are read again: a state whose
    // notification never came (an ending, progress the publisher coalesced away) still arrives.
    const heartbeat = setInterval(() => {
      void stream.write(': ping\n\n').catch(() => {});
      void load(new Date(readFrom - margin), { unfinished: false, replay: false }).catch(() => {});
    }, heartbeatMs);
    liveCounts.clients.tenant++;
    const done = new Promise<void>((resolve) => {
      stream.onAbort(() => {
        closed = true;
        resolve();
        wake?.();
      });
    });
    try {
      // A new stream starts with the unfinished tasks; a resume with what changed since the
      // client's last event (it has the rest).
      await load(resumeFrom === null ? null : new Date(resumeFrom - margin), { unfinished: resumeFrom === null, replay: resumeFrom !== null });
      while (!closed) {
        if (resync) {
          resync = false;
          waiting.clear();
          await send(stream, 'resync', { type: 'resync', at: Date.now() }, nextId());
        }
        while (itemEvents.length > 0 && !closed) {
          if (dropped > 0) {
            await stream.write(`: ${dropped} item events dropped for a slow connection\n\n`);
            dropped = 0;
          }
          const event = itemEvents.shift()!;
          await send(stream, event.type, event, nextId());
        }
        if (waiting.size > 0) {
          // States arriving in a burst go out together, at most once per flush period.
          const pause = lastFlush + flushMs - Date.now();
          if (pause > 0) await Promise.race([new Promise((resolve) => setTimeout(resolve, pause)), done]);
          for (const [taskId, event] of waiting) {
            if (closed) break;
            waiting.delete(taskId);
            sent.delete(taskId);
            sent.set(taskId, event);
            if (sent.size > MAX_REMEMBERED) sent.delete(sent.keys().next().value!);
            await send(stream, event.type, event, nextId());
          }
          lastFlush = Date.now();
        }
        if (closed || resync || itemEvents.length > 0 || waiting.size > 0) continue;
        await Promise.race([new Promise<void>((resolve) => (wake = resolve)), done]);
        wake = null;
      }
    } finally {
      liveCounts.clients.tenant--;
      clearInterval(heartbeat);
      offTenant();
      offFocus();
      offReconnect();
    }
  });
}

async function send(stream: SSEStreamingApi, event: string, data: unknown, id: number): Promise<void> {
  await stream.writeSSE({ event, data: JSON.stringify(data), id: String(id) });
}
