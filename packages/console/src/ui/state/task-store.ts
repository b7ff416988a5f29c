import type { EventCounts, TaskStateEvent, TaskView } from '../api/types.ts';
import { createBatcher } from './batcher.ts';
import { Emitter } from './emitter.ts';
import { applyEventCounts, compareStates, isTerminal, mergeTaskView, viewFromEvent } from './task-merge.ts';

export interface TaskStoreOptions {
  /** Asks the server for a task's full view: after a new round began, or for a task first seen in an event. */
  fetchTask(id: string): Promise<TaskView>;
  /** How long events are gathered before one render. @default 250 */
  batchMs?: number;
}

/** What one batch of changes held, beyond counters moving. */
export interface StoreChanges {
  /** Tasks that were seen to end during the batch (not those loaded already ended). */
  ended: TaskView[];
  /** Tasks first known from a live event (submitted elsewhere, or first seen moving). */
  submitted: TaskView[];
  /**
   * Known tasks whose status changed during the batch (those that ended among them, and those a
   * retry made elsewhere took back to running): they may move between tabs, and the tab counts.
   */
  moved: TaskView[];
}

// Events of tasks not loaded yet are kept (bounded) until a list answer brings the task, so a
// list answer that left the server before an event cannot show an older state for good.
const MAX_ORPHANS = 2000;
/** Unknown tasks asked about once each (a task beyond the loaded page keeps sending events). */
const MAX_PROBED = 5000;

/**
 * Every task the page knows, merged monotonically from list answers, detail answers and live
 * events. Events are applied at once but listeners run once per batch (250 ms), so 30 tasks
 * moving at once render four times a second, not hundreds.
 */
export class TaskStore {
  readonly #tasks = new Map<string, TaskView>();
  readonly #orphans = new Map<string, { counts: EventCounts; at: number }>();
  readonly #fetchTask: (id: string) => Promise<TaskView>;
  readonly #batch: { schedule(): void; cancel(): void };
  readonly #changed = new Emitter<StoreChanges>();
  #ended = new Set<string>();
  #submitted = new Set<string>();
  #moved = new Set<string>();
  readonly #probed = new Set<string>();
  #version = 0;

  constructor(options: TaskStoreOptions) {
    this.#fetchTask = options.fetchTask;
    this.#batch = createBatcher(() => this.#flush(), options.batchMs ?? 250);
  }

  /** Grows on every change; a view re-renders when it moved. */
  get version(): number {
    return this.#version;
  }

  get(id: string): TaskView | undefined {
    return this.#tasks.get(id);
  }

  /** Called once per batch of changes. */
  subscribe(listener: (changes: StoreChanges) => void): () => void {
    return this.#changed.on(listener);
  }

  /** Takes a view the server answered; returns the merged view now held. */
  upsert(view: TaskView): TaskView {
    const held = this.#tasks.get(view.id);
    let merged = mergeTaskView(held, view);
    const orphan = this.#orphans.get(view.id);
    if (orphan) {
      merged = applyEventCounts(merged, orphan.counts, orphan.at);
      this.#orphans.delete(view.id);
    }
    if (held && held.status !== merged.status) this.#moved.add(merged.id);
    this.#set(merged);
    return merged;
  }

  remove(id: string): void {
    if (this.#tasks.delete(id)) {
      this.#version++;
      this.#batch.schedule();
    }
  }

  applyEvent(event: TaskStateEvent): void {
    const held = this.#tasks.get(event.taskId);
    if (!held) {
      if (event.type === 'task.submitted') {
        const view = viewFromEvent(event);
        this.#set(view);
        this.#submitted.add(view.id);
        this.#refetch(view.id);
      } else {
        // A task first seen moving: new to this page (its submit event was superseded before it
        // arrived) or older than the loaded page. The server says which, once per task.
        this.#stash(event);
        this.#probe(event.taskId);
      }
      return;
    }
    const next = applyEventCounts(held, event.counts, event.at);
    if (next === held) return;
    if (!isTerminal(held.status) && isTerminal(next.status)) this.#ended.add(next.id);
    if (held.status !== next.status) this.#moved.add(next.id);
    this.#set(next);
    // A new round's start and its settled count at the start are the server's to tell.
    if (next.round > held.round) this.#refetch(next.id);
  }

  dispose(): void {
    this.#batch.cancel();
  }

  #set(view: TaskView): void {
    this.#tasks.set(view.id, view);
    this.#version++;
    this.#batch.schedule();
  }

  #stash(event: TaskStateEvent): void {
    const held = this.#orphans.get(event.taskId);
    if (held && compareStates(event.counts, held.counts) <= 0) return;
    this.#orphans.delete(event.taskId);
    this.#orphans.set(event.taskId, { counts: event.counts, at: event.at });
    if (this.#orphans.size > MAX_ORPHANS) this.#orphans.delete(this.#orphans.keys().next().value!);
  }

  #probe(id: string): void {
    if (this.#probed.has(id)) return;
    this.#probed.add(id);
    if (this.#probed.size > MAX_PROBED) this.#probed.delete(this.#probed.keys().next().value!);
    this.#fetchTask(id).then(
      (view) => {
        if (this.#tasks.has(id)) return;
        this.upsert(view);
        this.#submitted.add(id);
        this.#batch.schedule();
      },
      () => {
        // Gone, or not ours to see: nothing to show.
      },
    );
  }

  #refetch(id: string): void {
    this.#fetchTask(id).then(
      (view) => {
        if (this.#tasks.has(id)) this.upsert(view);
      },
      () => {
        // The task may have been deleted meanwhile; the event's state stays.
      },
    );
  }

  #flush(): void {
    const pick = (ids: Set<string>) => [...ids].map((id) => this.#tasks.get(id)).filter((t): t is TaskView => t !== undefined);
    const changes = { ended: pick(this.#ended), submitted: pick(this.#submitted), moved: pick(this.#moved) };
    this.#ended = new Set();
    this.#submitted = new Set();
    this.#moved = new Set();
    this.#changed.emit(changes);
  }
}
