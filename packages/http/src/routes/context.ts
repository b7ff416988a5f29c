import type { AnyFanoutDefinition, Fanout, Logger, TaskRecord } from '@fanout/core';
import type { TaskEventSubscriber } from '@fanout/sse-pg';
import type { Context } from 'hono';
import type { FailedAttempts, FailedAttemptsOptions } from '../auth/failed-attempts.ts';
import { HttpError } from '../errors.ts';
import { parseRequest, type AuthEnv, type Principal, type RouteSpec } from '../route.ts';
import { taskIdParams } from '../schemas.ts';

export interface TaskRoutesOptions {
  fanout: Fanout;
  /** The fan-out these routes submit. Its input schema is the body of `POST /tasks`. */
  definition: AnyFanoutDefinition;
  /** Resolves a bearer token to its principal; null refuses it (401). */
  authenticate(token: string): Promise<Principal | null> | Principal | null;
  /** Live streams (`/events`, `/tasks/:id/events`); without it they answer 404. */
  subscriber?: TaskEventSubscriber;
  /** Extra readiness checks for `/readyz` (throw to report not ready). */
  ready?: () => Promise<void>;
  /** The app's own routes, served beside the task routes with the same rules and documented with them. */
  routes?: readonly RouteSpec[];
  /** The path this router is mounted at, for the OpenAPI document and `Location` headers. @default '' */
  basePath?: string;
  /** Routes served at the root of the server (not under `basePath`), for the OpenAPI document. */
  rootRoutes?: readonly RouteSpec[];
  title?: string;
  /** Where a 500 is logged (with its request id). @default errors on stderr */
  logger?: Logger;
  /** The largest JSON body in bytes; a larger one is refused with 413 before it is buffered. @default 1048576 */
  bodyLimitBytes?: number;
  /**
   * Refused tokens per client address before the client is refused outright (429 with
   * `Retry-After`): a counter to share, its settings, or false for none. @default 30 a minute
   */
  failedAttempts?: FailedAttempts | FailedAttemptsOptions | false;
  /** Live streams one tenant may hold open on this process (429 beyond). @default 100 */
  streamsPerTenant?: number;
}

/**
 * The task of route parameter `id`, when it is of this definition and the caller's tenant.
 * Another tenant's task is answered exactly like a missing one (404): ids cannot be probed.
 */
export async function ownedTask(c: Context<AuthEnv>, fanout: Fanout, definition: AnyFanoutDefinition): Promise<TaskRecord> {
  const { id } = parseRequest(taskIdParams, { id: c.req.param('id') }, 'params');
  const task = await fanout.getTask(id);
  if (!task || task.kind !== definition.name || task.tenant !== c.get('principal').tenant) {
    throw new HttpError(404, 'not_found', `task ${id} not found`);
  }
  return task;
}

/**
 * `ownedTask`, for routes that read a task's items or logs: a task whose details retention
 * deleted answers 410 (its row, counts and times stay readable at `GET /tasks/:id`).
 */
export async function taskWithDetails(c: Context<AuthEnv>, fanout: Fanout, definition: AnyFanoutDefinition): Promise<TaskRecord> {
  const task = await ownedTask(c, fanout, definition);
  if (task.purgedAt) {
    throw new HttpError(410, 'purged', `task ${task.id}: its items and logs were deleted by retention on ${task.purgedAt.toISOString()} (its counts stay)`);
  }
  return task;
}
