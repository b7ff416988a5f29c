import { taskCountsOf, type TaskRecord } from '@fanout/core';
import type { Context } from 'hono';
import { streamSSE, type SSEStreamingApi } from 'hono/streaming';
import { isNewerState } from './publisher.ts';
import { isStateEvent, isTerminalEvent, type TaskCounts, type TaskEvent, type TaskStateEvent } from './events.ts';
import type { TaskEventSubscriber } from './subscriber.ts';
import { liveCounts } from './telemetry.ts';

/** What the handler needs to know of a task: its owner and its counters. */
export interface TaskState extends TaskCounts {
  id: string;
  tenant: string | null;
}

/** A stored task (`fanout.getTask()`) as the handler needs it. */
export function taskState(task: TaskRecord): TaskState {
  const { kind: _kind, ...state } = taskCountsOf(task);
  return state;
}

export interface TaskEventsHandlerOptions {
  subscriber: TaskEventSubscriber;
  /** Reads the task's current state (null when it does not exist). */
  loadTask(taskId: string): Promise<TaskState | null>;
  /** May this request see this task? Asked before anything is streamed. */
  authorize(c: Context, task: TaskState): boolean | Promise<boolean>;
  /** Which route parameter holds the task id. @default 'id' */
  param?: string;
  /** Comment lines keep proxies from closing an idle stream. @default 15000 */
  heartbeatMs?: number;
  /** Answer for an unknown or forbidden task (the same, so ids cannot be probed). */
  notFound?(c: Context): Response | Promise<Response>;
}

/** Logs and item failures kept for a client that reads slower than they come. */
const MAX_QUEUED = 1000;

const STATE_EVENT: Record<TaskCounts['status'], TaskStateEvent['type']> = {
  queued: 'task.progress',
  running: 'task.progress',
  stopping: 'task.progress',
  completed: 'task.completed',
  failed: 'task.failed',
  cancelled: 'task.cancelled',
};

/**
 * The id of a state event: its round and how many items were settled, or `end` for the ending.
 * Ids only grow, so `Last-Event-ID` tells the handler what the client already has.
 */
export function stateEventId(event: TaskStateEvent): string {
  const c = event.counts;
  return isTerminalEvent(event) ? `${c.round}.end` : `${c.round}.${c.succeeded + c.failed + c.cancelled}.${c.total}`;
}

function parseEventId(id: string | undefined): { round: number; settled: number; total: number; end: boolean } | null {
  const match = /^(\d+)\.(?:(end)|(\d+)\.(\d+))$/.exec(id ?? '');
  if (!match) return null;
  return { round: Number(match[1]), end: match[2] === 'end', settled: Number(match[3] ?? 0), total: Number(match[4] ?? 0) };
}

function stateEventOf(task: TaskState): TaskStateEvent {
  const { id, tenant, ...counts } = task;
  return { type: STATE_EVENT[task.status], taskId: id, tenant, at: Date.now(), counts };
}

/**
 * A Hono handler streaming one task's events as Server-Sent Events. It first sends the task's
 * current state, then live events; progress only ever moves forward, the ending is sent exactly
 * once per round and ends the stream, and a reconnecting client (`Last-Event-ID`) gets neither a
 * gap (it is sent the current state) nor a second ending. When the subscriber reconnects to Postgres (notifications
 * sent meanwhile are lost) the handler re-reads the task's state.
 */
export function taskEventsHandler(options: TaskEventsHandlerOptions) {
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const param = options.param ?? 'id';
  const notFound = options.notFound ?? ((c: Context) => c.json({ error: { code: 'not_found', message: 'task not found' } }, 404));

  return async (c: Context): Promise<Response> => {
    const task = await options.loadTask(c.req.param(param) ?? '');
    if (!task || !(await options.authorize(c, task))) return notFound(c);
    // The id as stored: events carry it (one sent in capitals names the same task).
    const taskId = task.id;

    const last = parseEventId(c.req.header('last-event-id'));
    return streamSSE(c, async (stream) => {
      let latest: TaskStateEvent | null = null; // the newest state this client has
      if (last) {
        // What the client says it has, as a state to compare against (only the round, the
        // settled count, the total and whether it was the ending matter to the comparison).
        const claimed: TaskStateEvent = {
          type: last.end ? 'task.completed' : 'task.progress',
          taskId,
          tenant: task.tenant,
          at: 0,
          counts: {
            status: last.end ? 'completed' : 'running',
            stopReason: null,
            total: last.total,
            succeeded: last.settled,
            failed: 0,
            cancelled: 0,
            round: last.round,
            dispatched: last.end,
          },
        };
        // An id ahead of the task as stored was never sent for it (a later round, more items
        // settled, an ending it has not had): the client is given the current state instead of
        // waiting for one that may never come.
        if (!isNewerState(claimed, stateEventOf(task))) latest = claimed;
      }
      // What waits for a slow client is bounded: states replace each other (only the newest
      // matters), and past MAX_QUEUED logs and failures the oldest are dropped.
      const queue: TaskEvent[] = [];
      let dropped = 0;
      let wake: (() => void) | null = null;
      const push = (event: TaskEvent) => {
        if (isStateEvent(event)) {
          const waiting = queue.findIndex(isStateEvent);
          if (waiting >= 0 && !isTerminalEvent(queue[waiting]!)) queue.splice(waiting, 1);
        } else if (queue.length >= MAX_QUEUED) {
          const oldest = queue.findIndex((e) => !isStateEvent(e));
          if (oldest >= 0) queue.splice(oldest, 1);
          dropped++;
        }
        queue.push(event);
        wake?.();
      };
      // Subscribe before reading the state, so nothing between the read and the subscription is lost.
      const unsubscribe = options.subscriber.subscribe(taskId, push);
      const offReconnect = options.subscriber.onReconnect(() => {
        void options.loadTask(taskId).then((now) => now && push(stateEventOf(now)), () => {});
      });
      // With each heartbeat, a stream whose task has not ended reads its state again: an ending
      // whose notification never came (its process died before the broadcast) still arrives.
      const heartbeat = setInterval(() => {
        void stream.write(': ping\n\n').catch(() => {});
        if (!latest || !isTerminalEvent(latest)) void options.loadTask(taskId).then((now) => now && push(stateEventOf(now)), () => {});
      }, heartbeatMs);
      let closed = false;
      liveCounts.clients.task++;
      const done = new Promise<void>((resolve) => {
        stream.onAbort(() => {
          closed = true;
          resolve();
          wake?.();
        });
      });
      try {
        push(stateEventOf((await options.loadTask(taskId)) ?? task));
        while (!closed) {
          while (queue.length > 0 && !closed) {
            if (dropped > 0) {
              await stream.write(`: ${dropped} log events dropped for a slow connection\n\n`);
              dropped = 0;
            }
            const event = queue.shift()!;
            if (isStateEvent(event)) {
              if (latest && !isNewerState(event, latest)) {
                // Stale, or the ending again: a client that has the ending already is done.
                if (isTerminalEvent(latest) && isTerminalEvent(event)) closed = true;
                continue;
              }
              latest = event;
              await send(stream, event, stateEventId(event));
              // The ending is the last event: the stream ends with it (a retry-failed opens a new
              // round, which a client follows by connecting again).
              if (isTerminalEvent(event)) closed = true;
            } else {
              await send(stream, event);
            }
          }
          if (closed) break;
          await Promise.race([new Promise<void>((resolve) => (wake = resolve)), done]);
          wake = null;
        }
      } finally {
        liveCounts.clients.task--;
        clearInterval(heartbeat);
        unsubscribe();
        offReconnect();
      }
    });
  };
}

async function send(stream: SSEStreamingApi, event: TaskEvent, id?: string): Promise<void> {
  await stream.writeSSE(id === undefined ? { event: event.type, data: JSON.stringify(event) } : { event: event.type, data: JSON.stringify(event), id });
}
