import { fileURLToPath } from 'node:url';
import { consoleLogger, maskedLogger, type Fanout, type Logger } from '@fanout/core';
import type { MeterProvider, TextMapPropagator, TracerProvider } from '@opentelemetry/api';
import { migrationsDir as fanoutMigrations } from '@fanout/prisma-adapter';
import { liveCounts } from '@fanout/sse-pg';
import type { Env, EnvShape } from '../config/env.ts';
import { fanoutOn, openPrismaDatabase, type AppPrismaClient, type PrismaDatabase } from '../database/prisma-runtime.ts';
import type { AppContext, AppServices, AppSpec, ProcessRole } from './define-app.ts';

/** Every migration folder an app needs, in order: every Fanout table (one folder), then the app's own. */
export function appMigrations(app: AppSpec<any, any, any>): string[] {
  return [fanoutMigrations, ...app.migrations.map((m) => (m instanceof URL ? fileURLToPath(m) : m))];
}

export interface AppRuntime<P extends AppPrismaClient = AppPrismaClient, E extends EnvShape = EnvShape, S extends AppServices = AppServices> extends AsyncDisposable {
  app: AppSpec<P, E, S>;
  ctx: AppContext<P, E, S>;
  db: PrismaDatabase<P>;
  fanout: Fanout;
  /** Stops the runtime (handlers get `graceMs`), then the app's services, then the database connections. */
  close(options?: { graceMs?: number }): Promise<void>;
}

/**
 * An app's side of one process: its database (pool, client, store), its services from `setup`,
 * and a runtime for its definition, configured from the environment. Not started.
 */
export async function openApp<P extends AppPrismaClient, E extends EnvShape, S extends AppServices>(
  app: AppSpec<P, E, S>,
  options: { env: Env<E>; role: ProcessRole; databaseUrl: string; logger?: Logger; meterProvider?: MeterProvider; tracerProvider?: TracerProvider; propagator?: TextMapPropagator },
): Promise<AppRuntime<P, E, S>> {
  const { env, role } = options;
  // Masked whatever logger the app plugs in: the kit's own lines, the app's and the runtime's.
  const logger = maskedLogger(options.logger ?? consoleLogger(env.FANOUT_LOG_LEVEL, { app: app.name, role, pid: process.pid }));
  const db = openPrismaDatabase({
    databaseUrl: options.databaseUrl,
    prisma: app.prisma,
    logger,
    poolSize: env.FANOUT_POOL_SIZE,
    applicationName: `fanout-${app.name}-${role}`,
  });
  let services: S;
  try {
    services = await app.setup({ prisma: db.prisma, pool: db.pool, env, logger, role });
  } catch (error) {
    await db.close();
    throw error;
  }
  const fanout = fanoutOn(db, {
    definitions: [services.definition],
    logger,
    worker: {
      concurrency: env.FANOUT_WORKER_CONCURRENCY,
      ...(env.FANOUT_LEASE_MS ? { leaseMs: env.FANOUT_LEASE_MS } : {}),
      ...(env.FANOUT_CONTROL_POLL_MS ? { controlPollMs: env.FANOUT_CONTROL_POLL_MS } : {}),
      ...(env.FANOUT_LIMIT_LEASE_MS ? { limitLeaseMs: env.FANOUT_LIMIT_LEASE_MS } : {}),
    },
    maintenance: {
      ...(env.FANOUT_MAINTENANCE_MS !== undefined ? { intervalMs: env.FANOUT_MAINTENANCE_MS } : {}),
      ...(env.FANOUT_ANNOUNCE_GRACE_MS !== undefined ? { announceGraceMs: env.FANOUT_ANNOUNCE_GRACE_MS } : {}),
      ...(env.FANOUT_RETENTION_DAYS !== undefined ? { retentionMs: env.FANOUT_RETENTION_DAYS * 86_400_000 } : {}),
    },
    ...(env.FANOUT_SUPERVISE_SECONDS ? { superviseIntervalSeconds: env.FANOUT_SUPERVISE_SECONDS } : {}),
    scheduling: {
      ...(env.FANOUT_TENANT_WINDOW ? { window: env.FANOUT_TENANT_WINDOW } : {}),
      ...(env.FANOUT_TENANT_WEIGHTS ? { tenantWeights: env.FANOUT_TENANT_WEIGHTS } : {}),
      ...(env.FANOUT_TENANT_MAX_IN_FLIGHT ? { maxInFlightPerTenant: env.FANOUT_TENANT_MAX_IN_FLIGHT } : {}),
      ...(env.FANOUT_TENANT_MAX_RUNNING_TASKS ? { maxRunningTasksPerTenant: env.FANOUT_TENANT_MAX_RUNNING_TASKS } : {}),
    },
    telemetry: {
      stalledAfterMs: env.FANOUT_STALL_MS,
      ...(options.meterProvider ? { meterProvider: options.meterProvider } : {}),
      ...(options.tracerProvider ? { tracerProvider: options.tracerProvider } : {}),
      ...(options.propagator ? { propagator: options.propagator } : {}),
    },
  });
  // Live streams and broadcasts of this process, in its presence reports (the console adds them up).
  fanout.stats.reporters.push(() => ({ live: { clients: { ...liveCounts.clients }, notifyFailures: liveCounts.notifyFailures } }));
  const ctx: AppContext<P, E, S> = { prisma: db.prisma, pool: db.pool, env, logger, role, fanout, services };
  let closing: Promise<void> | null = null;
  const close = (closeOptions: { graceMs?: number } = {}) =>
    (closing ??= (async () => {
      try {
        await fanout.stop({ graceMs: closeOptions.graceMs ?? env.FANOUT_DRAIN_MS });
        await services.close?.();
      } finally {
        await db.close();
      }
    })());
  return { app, ctx, db, fanout, close, [Symbol.asyncDispose]: () => close() };
}
