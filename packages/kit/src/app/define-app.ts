import type { ColumnSpec, ExportSpec, NewTaskPanel, PageSpec, TablePanel, TaskActionSpec } from '@fanout/console';
import type { AnyFanoutDefinition, Fanout, Logger } from '@fanout/core';
import type { ResultExport, RouteSpec } from '@fanout/http';
import type { PrismaPg } from '@prisma/adapter-pg';
import type pg from 'pg';
import type { Env, EnvShape } from '../config/env.ts';
import type { AppPrismaClient } from '../database/prisma-runtime.ts';

/** What a process does: serve HTTP, work jobs, or both (a local run). */
export type ProcessRole = 'api' | 'worker' | 'local';

export interface AppSetupContext<P extends AppPrismaClient, E extends EnvShape> {
  prisma: P;
  /** The pg pool under the client, for SQL the app sends itself (bulk loads, COPY-like inserts). */
  pool: pg.Pool;
  env: Env<E>;
  logger: Logger;
  role: ProcessRole;
}

/** What `setup` builds: the fan-out this app runs, and whatever its routes and hooks need. */
export interface AppServices {
  definition: AnyFanoutDefinition;
  /** Called once the runtime stopped, before the database connections close. */
  close?(): Promise<void>;
}

export interface AppContext<P extends AppPrismaClient, E extends EnvShape, S extends AppServices> extends AppSetupContext<P, E> {
  fanout: Fanout;
  services: S;
}

/** The app's part of the operator console: its "new task" panel, result columns, panels, buttons and pages. */
export interface AppConsole {
  newTask: NewTaskPanel;
  /** The app's columns in the item table (dotted paths into an item: `snapshot.filename`). */
  columns?: ColumnSpec[];
  /** Tables of the app's own data on a task's page, fed by its routes (`{id}`: the task). */
  detailPanels?: TablePanel[];
  /** Buttons of the app's own on a task's page (publish, discard…). */
  taskActions?: TaskActionSpec[];
  /** Pages of the app's own in the console's navigation. */
  pages?: PageSpec[];
  /**
   * Downloads of the app's own on a finished task's page (a report: `/runs/{id}/report.xlsx`),
   * offered after the CSV and JSON of the app's `results`.
   */
  exports?: ExportSpec[];
}

/** Something a local run starts beside the app (e.g. a simulated LLM endpoint). */
export interface LocalService {
  /** Variables the app then reads as if they were set (an explicit environment wins). */
  env?: Record<string, string>;
  /** Printed at start: what it is and where. */
  describe?: string;
  close(): Promise<void>;
}

export interface AppSpec<P extends AppPrismaClient = AppPrismaClient, E extends EnvShape = EnvShape, S extends AppServices = AppServices> {
  /** `[a-z][a-z0-9-]*`: the API prefix `/api/<name>`, the local data folder `.data/<name>`. */
  name: string;
  /** Shown on the console and in the OpenAPI document. */
  title: string;
  /** `import.meta.url` of the module whose default export is this app: process runners import it. */
  module: string;
  /** Makes the app's Prisma client: `(adapter) => new PrismaClient({ adapter })`. */
  prisma(adapter: PrismaPg): P;
  /** The app's own migration folders (Prisma layout); Fanout's come first. */
  migrations: readonly (string | URL)[];
  /** The app's environment variables (zod schemas); the common ones are always read. */
  env?: E;
  /** Builds the app's services and its fan-out definition, once per process. */
  setup(ctx: AppSetupContext<P, E>): S | Promise<S>;
  /** The app's own HTTP routes, under its prefix, with the task routes' rules (token, tenant, JSON errors). */
  routes?(ctx: AppContext<P, E, S>): readonly RouteSpec[];
  /** The results export of a finished task (`results.json`, `results.csv`). */
  results?(ctx: AppContext<P, E, S>): ResultExport<any>;
  /** The operator console served at `/`; its downloads are the app's `results` (when it has them) and its own `exports`. */
  console: AppConsole | ((ctx: AppContext<P, E, S>) => AppConsole);
  /** A local run (`pnpm start`): its port, sample data, and services to start beside it. */
  local?: {
    /** @default 3000 */
    port?: number;
    /** Loads sample data for `tenant` when the app has none; returns a line to print. */
    seed?(ctx: AppContext<P, E, S>, tenant: string): Promise<string | void>;
    services?(): Promise<LocalService[]>;
  };
}

const NAME = /^[a-z][a-z0-9-]{0,30}$/;

/** Declares an app for the kit's process runners and test harness. Checks what it can at once. */
export function defineApp<P extends AppPrismaClient, E extends EnvShape, S extends AppServices>(spec: AppSpec<P, E, S>): AppSpec<P, E, S> {
  if (!NAME.test(spec.name)) throw new Error(`defineApp: name "${spec.name}" must match ${NAME}`);
  if (!spec.module.startsWith('file:')) throw new Error('defineApp: module must be import.meta.url of the module that default-exports the app');
  return spec;
}
