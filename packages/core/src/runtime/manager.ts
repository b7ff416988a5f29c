import type { JobWithMetadata } from 'pg-boss';
import type { AnyFanoutDefinition, ListedItem } from '../define/define-fanout.ts';
import { defaultClassifier } from '../errors/classify.ts';
import { FanoutError, PermanentError } from '../errors/errors.ts';
import { isTerminalTaskStatus, type NewItem, type TaskRecord } from '../store/types.ts';
import type { RuntimeContext } from './context.ts';
import { errorFields, redactText, type Logger } from './logger.ts';
import type { JobTraceFields } from '../telemetry/tracing.ts';
import { storableProblem, storableText } from './storable.ts';

export interface ManagerJobData extends JobTraceFields {
  taskId: string;
}

const MAX_KEY_LENGTH = 512;

function isListedItem(value: unknown): value is ListedItem<unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && 'key' in value;
}

/** The first page's size at most: it commits in a few milliseconds, so the first children start at once. */
const FIRST_PAGE = 100;

/**
 * Streams what `listItems` yields into pages, so memory holds one page whatever N is. The first
 * page holds at most FIRST_PAGE items and each next one twice as many, up to `size`: the first
 * children start while the bigger pages go in. Accepts single items and arrays of items, from sync
 * or async iterables.
 */
async function* pages<T>(source: AsyncIterable<unknown> | Iterable<unknown>, pageSize: number): AsyncGenerator<ListedItem<T>[]> {
  let size = Math.min(pageSize, FIRST_PAGE);
  let page: ListedItem<T>[] = [];
  for await (const entry of source as AsyncIterable<unknown>) {
    const entries = Array.isArray(entry) ? entry : [entry];
    for (const listed of entries) {
      if (!isListedItem(listed)) {
        throw new PermanentError('listItems yielded a value that is not { key, snapshot }', { code: 'invalid_item' });
      }
      page.push(listed as ListedItem<T>);
      if (page.length >= size) {
        yield page;
        page = [];
        size = Math.min(pageSize, size * 2);
      }
    }
  }
  if (page.length > 0) yield page;
}

/**
 * The manager: lists the task's items and snapshots them into item rows, a page per transaction,
 * each page with the jobs that will take its items (its tenant's window, see scheduler.ts: items
 * and jobs commit together, so a crash mid-way loses nothing and a retry skips what is already
 * there), then exits. It never waits for the children: the last one to settle finishes the task.
 */
export async function runManager(ctx: RuntimeContext, definition: AnyFanoutDefinition, job: JobWithMetadata<ManagerJobData>): Promise<void> {
  const { taskId } = job.data;
  // The items are claimed later, anywhere: the dispatch's trace context goes with the task.
  const task = await ctx.store.startDispatch(taskId, ctx.telemetry.jobFields().trace ?? null);
  if (!task) {
    ctx.logger.warn('manager job for a task that does not exist', { definition: definition.name, taskId });
    return;
  }
  if (isTerminalTaskStatus(task.status) || task.dispatchedAt) return;

  const controller = new AbortController();
  // Stop listing when the runtime shuts down or pg-boss gave up on this job (expired): another
  // attempt will take over, and two managers must not dispatch side by side.
  const onAbort = () => controller.abort(ctx.shutdown.aborted ? ctx.shutdown.reason : job.signal.reason);
  ctx.shutdown.addEventListener('abort', onAbort, { once: true });
  job.signal.addEventListener('abort', onAbort, { once: true });
  const finalAttempt = job.retryCount >= job.retryLimit;
  try {
    // A task that stopped before (or while) its items were listed has a dispatch cut short.
    const listedAll = task.status === 'running' && (await dispatch(ctx, definition, task, controller.signal));
    const finished = await ctx.store.finishDispatch(taskId, { cutShort: !listedAll });
    if (finished) ctx.afterSettle({ settled: [], tasks: [finished] });
  } catch (error) {
    // A shutdown or an expiry is not the task's failure: the job is retried (on another process).
    if (controller.signal.aborted) throw error;
    const classified = (definition.classify ?? defaultClassifier)(error);
    if (classified.kind === 'transient' && !finalAttempt) {
      ctx.logger.warn('manager failed, will retry', { definition: definition.name, taskId, attempt: job.retryCount + 1, ...errorFields(error) });
      throw error;
    }
    ctx.logger.error('manager failed; stopping the task', { definition: definition.name, taskId, attempt: job.retryCount + 1, ...errorFields(error) });
    // Shown to the task's tenant: credentials masked, and text PostgreSQL stores (no NUL, no half character).
    const stopped = await ctx.store.stopTask(taskId, 'manager_failed', storableText(redactText(`${classified.code}: ${classified.message}`)));
    if (stopped) ctx.announceTask(stopped.task, true);
  } finally {
    ctx.shutdown.removeEventListener('abort', onAbort);
    job.signal.removeEventListener('abort', onAbort);
  }
}

/** Lists and inserts the task's items; false when the task stopped before the listing ended. */
async function dispatch(ctx: RuntimeContext, definition: AnyFanoutDefinition, task: TaskRecord, runtimeSignal: AbortSignal): Promise<boolean> {
  const input = definition.input.parse(task.input);
  // The listing's signal also aborts when the task stops (a cancel, its deadline, its failures):
  // a page insert says so, and between pages the task's status is looked at every controlPollMs.
  const stop = new AbortController();
  const stopped = () => stop.abort(new FanoutError('aborted', `task ${task.id} stopped; its dispatch ends`));
  const watch = setInterval(() => {
    ctx.store.stoppedTasks([task.id]).then(
      (ids) => ids.length > 0 && stopped(),
      () => {},
    );
  }, ctx.settings.controlPollMs);
  watch.unref();
  try {
    return await listAndInsert(ctx, definition, task, input, AbortSignal.any([runtimeSignal, stop.signal]), stopped);
  } catch (error) {
    // The task stopped: what is in stays, the rest is never sent; that is no failure.
    if (stop.signal.aborted && !runtimeSignal.aborted) return false;
    throw error;
  } finally {
    clearInterval(watch);
  }
}

/** True when the listing reached its end and every page went in. */
async function listAndInsert(ctx: RuntimeContext, definition: AnyFanoutDefinition, task: TaskRecord, input: unknown, signal: AbortSignal, onStopped: () => void): Promise<boolean> {
  const listed = await definition.listItems(input, {
    task: { id: task.id, tenant: task.tenant },
    signal,
    logger: ctx.logger,
  });
  // Up to `pagesInFlight` pages are inserted side by side while the listing goes on, so the
  // manager does not wait on one round trip at a time; memory still holds a few pages at most.
  const pagesInFlight = definition.resolved.manager.pagesInFlight;
  const inFlight = new Set<Promise<void>>();
  let stopped = false;
  let failure: unknown = null;
  let seq = 0;
  let pageNumber = 0;
  let reachedEnd = false;
  // An item table that grew from nothing to many thousand rows in seconds has planner statistics
  // from when it was empty, and the claims then risk a plan that scans. Refresh them as the
  // dispatch doubles, instead of waiting for autovacuum (the store skips a table whose statistics
  // already count ten times as many rows: one holding earlier tasks' items).
  let analyzeAt = 5_000;
  try {
    for await (const page of pages(listed, definition.resolved.manager.pageSize)) {
      signal.throwIfAborted();
      if (stopped || failure) break;
      // Checked when there is another page to insert, so a dispatch that has just ended is not
      // analyzed for nothing.
      if (seq >= analyzeAt) {
        analyzeAt *= 2;
        await ctx.refreshStatistics(seq);
      }
      const items: NewItem[] = page.map((listed) => toNewItem(definition, listed, ++seq));
      const insert: Promise<void> = ctx.telemetry
        .page(task, ++pageNumber, items, () => ctx.withEnqueuer((enqueue) => ctx.store.insertItems(task.id, items, enqueue)))
        .then((result) => {
          // Stopped while dispatching: what is in stays, the rest is never sent.
          if (result.status !== 'running') {
            stopped = true;
            onStopped();
          }
        })
        .catch((error: unknown) => {
          failure ??= error;
        })
        .finally(() => inFlight.delete(insert));
      inFlight.add(insert);
      if (inFlight.size >= pagesInFlight) await Promise.race(inFlight);
    }
    reachedEnd = !stopped && !failure;
  } finally {
    // Pages already on their way finish (or roll back) before the manager reports anything.
    await Promise.all(inFlight);
  }
  if (failure) throw failure;
  // A page that found the task stopped inserted nothing, even as the last one.
  return reachedEnd && !stopped;
}

/**
 * One listed item as the store takes it: a key no text column can hold (a NUL) is stored with
 * U+FFFD in its place and its item fails; a snapshot that does not match the item schema, or
 * cannot be stored, fails that item, not the task. A key out of bounds fails the listing.
 */
function toNewItem(definition: AnyFanoutDefinition, listed: ListedItem<unknown>, seq: number): NewItem {
  if (typeof listed.key !== 'string' || listed.key.length === 0 || listed.key.length > MAX_KEY_LENGTH) {
    throw new PermanentError(`item key: must be a non-empty string of at most ${MAX_KEY_LENGTH} characters`, { code: 'invalid_key' });
  }
  const key = storableText(listed.key);
  if (key !== listed.key) return { key, seq, snapshot: null, error: { code: 'invalid_key', message: 'key: contains a NUL character (\\u0000), which PostgreSQL cannot store', retryable: false } };
  const parsed = definition.item.safeParse(listed.snapshot);
  if (!parsed.success) {
    const raw = storableProblem(listed.snapshot) ? null : (listed.snapshot ?? null);
    return { key, seq, snapshot: raw, error: { code: 'validation', message: storableText(`snapshot: ${parsed.error.message}`), retryable: false } };
  }
  const problem = storableProblem(parsed.data);
  return problem ? { key, seq, snapshot: null, error: { code: 'invalid_snapshot', message: `snapshot: ${problem}`, retryable: false } } : { key, seq, snapshot: parsed.data };
}

/**
 * The items of a small task, listed by `submit()` (`options.manager.dispatchAtSubmit`): all of
 * them when there are at most that many, else null (the listing is stopped there, and the
 * manager job lists the task as usual). A listing that throws is also left to the manager, whose
 * retries and classifier decide about it.
 */
export async function listAtSubmit(definition: AnyFanoutDefinition, input: unknown, task: { id: string; tenant: string | null }, logger: Logger): Promise<NewItem[] | null> {
  const most = definition.resolved.manager.dispatchAtSubmit;
  const controller = new AbortController();
  let listedAll = false;
  try {
    const listed = await definition.listItems(input, { task, signal: controller.signal, logger });
    const items: NewItem[] = [];
    for await (const page of pages(listed, most + 1)) {
      if (items.length + page.length > most) return null;
      for (const entry of page) items.push(toNewItem(definition, entry, items.length + 1));
    }
    listedAll = true;
    return items;
  } catch (error) {
    logger.debug('listing at submit failed; the manager job lists the task', { definition: definition.name, taskId: task.id, ...errorFields(error) });
    return null;
  } finally {
    // Tells a listing still going (more items than dispatched at submit) to stop. One that ran to
    // its end has nothing to stop (and an error made for nothing costs a stack trace a submit).
    if (!listedAll) controller.abort(new FanoutError('aborted', `task ${task.id}: listed by its manager instead`));
  }
}
