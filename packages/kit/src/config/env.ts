import { z } from 'zod';
import { parseTokens, type TokenTable } from '../auth/tokens.ts';

/** A configuration mistake: names the variable and the rule, once per problem. */
export class ConfigError extends Error {
  readonly issues: readonly { variable: string; rule: string }[];
  constructor(issues: readonly { variable: string; rule: string }[]) {
    const lines = issues.map((i) => `${i.variable}: ${i.rule}`);
    super(`invalid configuration: ${lines.join('; ')}`);
    this.name = 'ConfigError';
    this.issues = issues;
  }
}

/** An integer variable with its bounds in the message: "must be an integer from 1 to 100". */
export function intVar(options: { min: number; max?: number }) {
  const rule = options.max === undefined ? `must be an integer >= ${options.min}` : `must be an integer from ${options.min} to ${options.max}`;
  const number = z.coerce.number({ error: rule }).int({ error: rule }).min(options.min, { error: rule });
  return options.max === undefined ? number : number.max(options.max, { error: rule });
}

/** A string variable. */
export const stringVar = () => z.string();

const postgresUrl = z
  .string()
  .refine((url) => /^postgres(ql)?:\/\/\S+$/.test(url) && URL.canParse(url), { error: 'must be a postgres:// or postgresql:// connection URL' });

const WEIGHTS_RULE = 'must be tenant=weight pairs separated by commas, each weight a number above 0 and at most 100';
const tenantWeights = z.string().transform((spec, ctx): Record<string, number> => {
  const weights: Array<[string, number]> = [];
  for (const entry of spec.split(',').map((e) => e.trim()).filter(Boolean)) {
    const at = entry.lastIndexOf('=');
    const tenant = entry.slice(0, at).trim();
    const weight = Number(entry.slice(at + 1));
    if (at <= 0 || !(weight > 0 && weight <= 100)) {
      ctx.addIssue({ code: 'custom', message: `${WEIGHTS_RULE} (${JSON.stringify(entry.slice(0, 40))})` });
      return z.NEVER;
    }
    weights.push([tenant, weight]);
  }
  // Own properties whatever the tenant's name (`__proto__` included).
  return Object.fromEntries(weights);
});

const tokens = z.string().transform((spec, ctx): TokenTable => {
  try {
    return parseTokens(spec);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: (error as Error).message });
    return z.NEVER;
  }
});

/** The variables every Fanout app reads. An app adds its own with `env` in `defineApp`. */
export const commonEnv = {
  /** The database (tasks, jobs, the app's tables). Optional for a local run: an embedded PostgreSQL then. */
  DATABASE_URL: postgresUrl.optional(),
  /** HTTP port of an API (or local) process; 0 picks a free one. */
  PORT: intVar({ min: 0, max: 65535 }).optional(),
  HOST: stringVar().default('127.0.0.1'),
  /** Bearer tokens: `token:tenant[:role],…`, role `user` (default) or `operator`. */
  FANOUT_TOKENS: tokens.optional(),
  FANOUT_LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error'], { error: 'must be one of debug, info, warn, error' }).default('warn'),
  /** Database connections per process (Prisma and the store share them; pg-boss has as many). */
  FANOUT_POOL_SIZE: intVar({ min: 1, max: 200 }).default(10),
  /** Child handlers in flight in one worker process. */
  FANOUT_WORKER_CONCURRENCY: intVar({ min: 1, max: 10_000 }).default(10),
  /** Claim lease of an item (a dead worker's items are taken over after it). */
  FANOUT_LEASE_MS: intVar({ min: 1000 }).optional(),
  /** Lease of a global-limit slot: how long a killed worker can keep the others waiting. */
  FANOUT_LIMIT_LEASE_MS: intVar({ min: 300 }).optional(),
  /** How often each worker process runs a maintenance pass. */
  FANOUT_MAINTENANCE_MS: intVar({ min: 10 }).optional(),
  /** How long after a task ended an ending nobody announced is announced by the maintenance loop. */
  FANOUT_ANNOUNCE_GRACE_MS: intVar({ min: 0 }).optional(),
  /** How often cancels are noticed by running handlers. */
  FANOUT_CONTROL_POLL_MS: intVar({ min: 10 }).optional(),
  /** pg-boss's supervision pass (fails the jobs of dead workers so they are retried). */
  FANOUT_SUPERVISE_SECONDS: intVar({ min: 1 }).optional(),
  /** Days after its end a task's items and logs are deleted (its row and counts stay); unset keeps them. */
  FANOUT_RETENTION_DAYS: intVar({ min: 1, max: 3650 }).optional(),
  /** Jobs each tenant keeps queued per definition: its share of the workers when all are busy. */
  FANOUT_TENANT_WINDOW: intVar({ min: 1, max: 1000 }).optional(),
  /** Shares of tenants relative to the others (1 each by default): `team-a=2,team-b=0.5`. */
  FANOUT_TENANT_WEIGHTS: tenantWeights.optional(),
  /** Items of one tenant running at once across every process, at most (a quota). */
  FANOUT_TENANT_MAX_IN_FLIGHT: intVar({ min: 1 }).optional(),
  /** Running tasks of one tenant served at once (by priority, then age), at most. */
  FANOUT_TENANT_MAX_RUNNING_TASKS: intVar({ min: 1 }).optional(),
  /** Where a local run keeps its files (apps put theirs in a folder of their own under it). */
  FANOUT_DATA_DIR: stringVar().default('.data'),
  /** How long a stopping process lets running handlers finish before aborting them. */
  FANOUT_DRAIN_MS: intVar({ min: 0 }).default(10_000),
  /**
   * Serve this process's metrics for Prometheus at `/metrics` on this port (its own port, every
   * process kind; 0 picks a free one, printed as `METRICS <port>`). Unset: no metrics listener.
   */
  FANOUT_METRICS_PORT: intVar({ min: 0, max: 65535 }).optional(),
  /** Address the metrics listener binds. */
  FANOUT_METRICS_HOST: stringVar().default('127.0.0.1'),
  /** A running task whose settled count has not moved this long counts as stalled (`fanout_tasks_stalled`). */
  FANOUT_STALL_MS: intVar({ min: 1000 }).default(600_000),
  /** The largest JSON request body in bytes (413 beyond it; uploads have their own limits). */
  FANOUT_BODY_LIMIT_BYTES: intVar({ min: 1024, max: 256 * 1024 * 1024 }).default(1024 * 1024),
  /** Refused tokens one client address may present a minute before it is refused outright (429); 0: no limit. */
  FANOUT_AUTH_FAILURES_PER_MINUTE: intVar({ min: 0, max: 1_000_000 }).default(30),
  /** Reverse proxies of your own in front of the API (their X-Forwarded-For names the client whose refused tokens are counted). */
  FANOUT_PROXY_HOPS: intVar({ min: 0, max: 10 }).default(0),
  /** Live event streams one tenant may hold open on one API process (429 beyond). */
  FANOUT_STREAMS_PER_TENANT: intVar({ min: 1, max: 100_000 }).default(100),
};

export type EnvShape = Record<string, z.ZodType>;
export type CommonEnv = z.output<z.ZodObject<typeof commonEnv>>;
export type Env<E extends EnvShape> = CommonEnv & z.output<z.ZodObject<E>>;

// Values of these are never repeated in an error: they may hold credentials.
const SECRET = /TOKEN|KEY|SECRET|PASSWORD|URL/i;

/**
 * Reads the common variables and the app's own from `source` (default `process.env`), validated
 * with zod. An empty variable counts as unset, as shells and `.env` files mean it. Every problem
 * is reported at once, each naming its variable and its rule.
 */
export function loadEnv<E extends EnvShape>(appEnv: E, source: Record<string, string | undefined> = process.env): Env<E> {
  const schema = z.object({ ...commonEnv, ...appEnv });
  const values = Object.fromEntries(Object.entries(source).filter(([, value]) => value !== ''));
  const result = schema.safeParse(values);
  if (result.success) return result.data as Env<E>;
  throw new ConfigError(
    result.error.issues.map((issue) => {
      const variable = String(issue.path[0] ?? 'environment');
      const got = values[variable];
      const shown = got === undefined || SECRET.test(variable) ? '' : ` (got ${JSON.stringify(got.length > 60 ? `${got.slice(0, 60)}…` : got)})`;
      return { variable, rule: `${issue.message}${shown}` };
    }),
  );
}
