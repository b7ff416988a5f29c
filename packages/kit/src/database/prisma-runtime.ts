import { consoleLogger, createFanout, maskedLogger, type AnyFanoutDefinition, type Fanout, type FanoutRuntimeOptions, type Logger, type TelemetryOptions } from '@fanout/core';
import { prismaFanoutStore, type PrismaClientLike, type PrismaFanoutStore } from '@fanout/prisma-adapter';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';

/** A Prisma 7 client generated from a schema holding the Fanout models. */
export type AppPrismaClient = PrismaClientLike & { $disconnect(): Promise<void> };

export interface PrismaDatabaseOptions<P extends AppPrismaClient> {
  databaseUrl: string;
  /** Makes the app's client on the adapter: `(adapter) => new PrismaClient({ adapter })`. */
  prisma(adapter: PrismaPg): P;
  /** @default JSON lines on stderr from `warn` up */
  logger?: Logger;
  /** Connections in the pool Prisma and the store share; pg-boss keeps as many of its own. @default 10 */
  poolSize?: number;
  /** Shown in `pg_stat_activity` for this process's connections. */
  applicationName?: string;
}

/** The pool, the app's client on it, and the Fanout store over both. */
export interface PrismaDatabase<P extends AppPrismaClient> {
  pool: pg.Pool;
  prisma: P;
  store: PrismaFanoutStore;
  /** Disconnects the client, then ends the pool. */
  close(): Promise<void>;
}

export function openPrismaDatabase<P extends AppPrismaClient>(options: PrismaDatabaseOptions<P>): PrismaDatabase<P> {
  const logger = maskedLogger(options.logger ?? consoleLogger('warn'));
  const pool = new pg.Pool({
    connectionString: options.databaseUrl,
    max: options.poolSize ?? 10,
    ...(options.applicationName ? { application_name: options.applicationName } : {}),
  });
  // An idle connection that dies (server restart, proxy timeout) is dropped by the pool; without
  // a listener its 'error' event would end the process.
  pool.on('error', (error) => logger.warn('idle database connection lost', { error: error.message }));
  const prisma = options.prisma(new PrismaPg(pool));
  // The store sends its SQL straight through the pool under the client (see its `pool` option).
  const store = prismaFanoutStore(prisma, { pool });
  let closing: Promise<void> | null = null;
  const close = () =>
    (closing ??= (async () => {
      try {
        await prisma.$disconnect();
      } finally {
        await pool.end();
      }
    })());
  return { pool, prisma, store, close };
}

export interface FanoutOnOptions {
  definitions: readonly AnyFanoutDefinition[];
  logger?: Logger;
  worker?: FanoutRuntimeOptions['worker'];
  maintenance?: FanoutRuntimeOptions['maintenance'];
  /** How items are shared between tenants and tasks; the same in every process. */
  scheduling?: FanoutRuntimeOptions['scheduling'];
  /** pg-boss's supervision pass, which fails the jobs of dead workers. @default 15 */
  superviseIntervalSeconds?: number;
  /** OpenTelemetry providers and the stall threshold (see `FanoutRuntimeOptions.telemetry`). */
  telemetry?: TelemetryOptions;
}

/** A runtime on an open database: pg-boss on the same database, with as many connections as the pool. */
export function fanoutOn(db: PrismaDatabase<AppPrismaClient>, options: FanoutOnOptions): Fanout {
  const supervise = options.superviseIntervalSeconds;
  const { connectionString, max, application_name } = db.pool.options;
  return createFanout({
    store: db.store,
    boss: {
      ...(connectionString ? { connectionString } : {}),
      max: max ?? 10,
      ...(application_name ? { application_name: `${application_name}-boss` } : {}),
      ...(supervise ? { superviseIntervalSeconds: supervise, monitorIntervalSeconds: supervise } : {}),
    },
    definitions: options.definitions,
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.worker ? { worker: options.worker } : {}),
    ...(options.maintenance ? { maintenance: options.maintenance } : {}),
    ...(options.scheduling ? { scheduling: options.scheduling } : {}),
    ...(options.telemetry ? { telemetry: options.telemetry } : {}),
  });
}

export interface PrismaRuntimeOptions<P extends AppPrismaClient> extends PrismaDatabaseOptions<P>, Omit<FanoutOnOptions, 'definitions'> {
  /** The fan-outs this runtime works (given the client, for definitions that query through it). */
  definitions: readonly AnyFanoutDefinition[] | ((prisma: P) => readonly AnyFanoutDefinition[]);
}

export interface PrismaRuntime<P extends AppPrismaClient> extends PrismaDatabase<P>, AsyncDisposable {
  fanout: Fanout;
  /** Stops the runtime (running handlers get `graceMs` to finish), then closes the client and the pool. */
  close(options?: { graceMs?: number }): Promise<void>;
}

/**
 * One process's database side in one call: pool, client, store and runtime, closed in that
 * order's reverse (the runtime drains before the connections it settles through go away).
 */
export function createPrismaRuntime<P extends AppPrismaClient>(options: PrismaRuntimeOptions<P>): PrismaRuntime<P> {
  const db = openPrismaDatabase(options);
  const fanout = fanoutOn(db, { ...options, definitions: typeof options.definitions === 'function' ? options.definitions(db.prisma) : options.definitions });
  let closing: Promise<void> | null = null;
  const close = (closeOptions: { graceMs?: number } = {}) =>
    (closing ??= (async () => {
      try {
        await fanout.stop(closeOptions);
      } finally {
        await db.close();
      }
    })());
  return { ...db, fanout, close, [Symbol.asyncDispose]: () => close() };
}
